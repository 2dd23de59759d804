"""Advisory file locks: two runs never write the same artifact at once, and a catalog rebuild never runs
beside a writer (``locks/catalog-writers.lock``: writers hold it shared while a writing connection is
open, ``catalog rebuild`` holds it alone for its whole run)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from defsentflow.storage.paths import data_root, root_path

__all__ = ["CatalogLockedError", "WRITER_LOCK", "artifact_lock", "writer_shared", "writers_excluded"]

log = logging.getLogger(__name__)

WRITER_LOCK = "catalog-writers.lock"
# Data roots whose writer lock this process holds alone (a rebuild): its own opens pass.
_EXCLUSIVE: set[str] = set()


class CatalogLockedError(RuntimeError):
    """The catalog stayed locked by another process for longer than the timeout."""


@contextlib.contextmanager
def artifact_lock(key: str, root: str | os.PathLike | None = None) -> Iterator[Path]:
    """Hold an exclusive lock on ``<data root>/locks/<key>.lock`` (blocks while another holds it).

    The kernel drops the lock when its holder dies, even by ``kill -9``, so no stale lock survives.
    """
    path = root_path(data_root(root), "locks", f"{key}.lock")  # a locks/ link leading out is refused
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _writer_lock_file(root: Path) -> IO[str] | None:
    """The open writer-lock file, or None on a read-only data root (nothing can be written there)."""
    path = root_path(root, "locks", WRITER_LOCK)  # a locks/ link leading out is refused
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "a+")  # noqa: SIM115 - held by the caller's block
    except OSError:
        return None


@contextlib.contextmanager
def writer_shared(root: Path, timeout: float) -> Iterator[None]:
    """Hold the catalog's writer lock shared (a writing connection is open): waits, saying so, while a
    rebuild holds it, at most ``timeout`` seconds (:class:`CatalogLockedError`)."""
    if str(root) in _EXCLUSIVE or os.environ.get("DEFSENTFLOW_WORKER") == "1":  # a worker: the open refuses
        yield
        return
    fh = _writer_lock_file(root)
    if fh is None:
        yield
        return
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("waiting for `defsentflow catalog rebuild` to finish: it holds the catalog's writer lock "
                        "(%s) for its whole run (up to %.0fs)", fh.name, timeout)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise CatalogLockedError(f"{root / 'catalog.duckdb'}: a catalog rebuild held the writer "
                                                 f"lock for {timeout:.0f}s") from None
                    time.sleep(0.1)
        yield
    finally:
        fh.close()


@contextlib.contextmanager
def writers_excluded(root: Path) -> Iterator[None]:
    """Hold the catalog's writer lock alone: every other writer of ``root``, in any process, waits until
    this block ends; this process's own opens go on (re-entrant)."""
    if str(root) in _EXCLUSIVE:
        yield
        return
    fh = _writer_lock_file(root)
    try:
        if fh is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log.warning("waiting for the catalog's writers to finish their writes (%s)", fh.name)
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        _EXCLUSIVE.add(str(root))
        yield
    finally:
        _EXCLUSIVE.discard(str(root))
        if fh is not None:
            fh.close()
