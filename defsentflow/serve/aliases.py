"""Serving an alias: ``model=demo@champion`` answers from the model the alias names at request time.

A promotion (the gate after a pipeline run, ``defsentflow promote``, ``rollback``) is a new catalog
row and a rewritten row record of the alias (``records/aliases/``). The follower looks at that file
on every request (one ``stat``) and reads the holder from the catalog when it changed, or at the
latest every ``ttl`` seconds; nothing restarts. The new holder's index is loaded (off the look-up
thread) before the first request is answered from it, and a request already answered from the old
model's index finishes there: the switch is the next request's, never a half-loaded index's.

Example:
    >>> follower = AliasFollower(serve_catalog, lookup_service)
    >>> served = await follower.served("demo@champion")
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

from defsentflow.serve.catalog import ServeCatalog, ServedIndex, UnknownModelError
from defsentflow.storage.row_records import row_record_path

__all__ = ["AliasFollower", "Holder"]


@dataclass(frozen=True)
class Holder:
    """The model an alias names, and since when."""

    alias: str
    model_id: str
    since: Any


class AliasFollower:
    """Resolve aliases to served indexes at request time (see the module doc).

    Args:
        catalog: the app's :class:`~defsentflow.serve.catalog.ServeCatalog`.
        service: the look-up service whose ``load(served)`` loads an index before it is used.
        ttl: the longest a holder read from the catalog is trusted without its record having changed.
    """

    def __init__(self, catalog: ServeCatalog, service: Any, *, ttl: float = 5.0):
        self.catalog, self.service, self.ttl = catalog, service, ttl
        self._seen: dict[str, tuple[Any, float, Holder | None]] = {}

    def _stamp(self, alias: str) -> Any:
        try:
            st = os.stat(row_record_path(self.catalog.catalog.root, "alias", alias))
        except (OSError, ValueError):
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def holder(self, alias: str) -> Holder | None:
        """What ``alias`` names now (None: no such alias)."""
        stamp, now = self._stamp(alias), time.monotonic()
        seen = self._seen.get(alias)
        if seen is not None and seen[0] == stamp and now - seen[1] < self.ttl:
            return seen[2]
        rows = self.catalog.alias_holders(alias)
        found = Holder(alias, rows[0]["model_id"], rows[0]["since"]) if rows else None
        self._seen[alias] = (stamp, now, found)
        return found

    def resolve(self, alias: str, mode: str | None = None) -> ServedIndex:
        """The index a request for ``alias`` is answered from (blocking: it may read the catalog).

        Raises:
            UnknownModelError: no such alias, or its model has no served index (the message says which).
        """
        found = self.holder(alias)
        if found is None:
            known = ", ".join(r["alias"] for r in self.catalog.alias_holders()) or "none"
            raise UnknownModelError(f"no alias {alias!r}; aliases: {known}")
        try:
            return self.catalog.resolve(found.model_id, mode)
        except UnknownModelError as exc:
            raise UnknownModelError(f"{alias} names {found.model_id}: {exc}") from None

    async def served(self, alias: str, mode: str | None = None) -> ServedIndex:
        """:meth:`resolve` off the event loop, the index loaded before it answers anything."""
        served = await asyncio.to_thread(self.resolve, alias, mode)
        await asyncio.to_thread(self.service.load, served)
        return served
