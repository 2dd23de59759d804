"""Advisory file locks so that two runs never write the same artifact at once, and what a command
says while another process holds the DuckDB catalog (DuckDB's own lock on the file)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from defsentflow.storage.paths import data_root

__all__ = ["LOCK_ADVICE", "LOCK_NOTICE_S", "artifact_lock", "lock_wait_message"]

LOCK_NOTICE_S = 1.0
"""A wait for the catalog longer than this is said on stderr (short waits are other runs' transactions)."""
LOCK_ADVICE = ("close the program holding it, e.g. a `duckdb` shell; `defsentflow sql \"...\"` reads it and lets go "
               "after each query")


def lock_wait_message(path: Path, timeout: float) -> str:
    """The one line a command waiting for the catalog says: what it waits for, how long, what to do."""
    return (f"waiting for the catalog {path}: another process has it open (DuckDB: one process writes a database "
            f"file, and only while no other has it open, even read-only); waiting up to {timeout:.0f} s: {LOCK_ADVICE}")


@contextlib.contextmanager
def artifact_lock(key: str, root: str | os.PathLike | None = None) -> Iterator[Path]:
    """Hold an exclusive lock on ``<data root>/locks/<key>.lock`` (blocks while another holds it).

    The kernel drops the lock when its holder dies, even by ``kill -9``, so no stale lock survives.
    """
    path = data_root(root) / "locks" / f"{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
