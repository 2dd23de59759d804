"""The content check of a model made elsewhere: its id (``base:<name>``, :mod:`defsentflow.model.ids`)
is the name a user passes, and its row keeps the content hash of the files it was filed with
(``meta.base_model_hash``). Every place that trusts such a row against a folder (the model lookup,
``catalog rebuild``) asks :func:`content_id_problem`, so an id never stands for other files than the
ones its figures were measured on (a relative folder named from another directory, a changed folder).

Example:
    >>> content_id_problem("base:m", "/no/such/folder", "0123456789ab") is None  # nothing here to check
    True
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from defsentflow.storage.hashing import model_folder_hash

__all__ = ["BASE_PREFIXES", "content_id_problem", "recorded_content_hash"]

BASE_PREFIXES = ("base:", "base-")
"""Ids of models made elsewhere (``base:<name>``; ``base-<hash>`` of older catalogs): the ones checked here."""


def recorded_content_hash(meta: Mapping[str, Any] | str | None) -> str | None:
    """The content hash a ``models`` row's ``meta`` (a mapping or its JSON text) records, if any."""
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            return None
    value = meta.get("base_model_hash") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) and value else None


def content_id_problem(model_id: str, path: str | os.PathLike | None, content_hash: str | None) -> str | None:
    """Why ``model_id``, filed with files of hash ``content_hash``, does not name the folder at ``path``
    (None: it does, no hash was recorded, or ``path`` is no folder here to check)."""
    if not str(model_id).startswith(BASE_PREFIXES) or not content_hash or not path or not Path(path).is_dir():
        return None  # a model trained here is its folder's artifact record (re-hashed before it is trusted)
    actual = model_folder_hash(path)
    if actual == content_hash:
        return None
    return (f"model {model_id} names the files with content hash {content_hash[:12]}..., but {path} holds "
            f"{actual[:12]}... (another model, or the same folder changed)")
