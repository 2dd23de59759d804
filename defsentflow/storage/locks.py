"""Advisory file locks so that two runs never write the same artifact at once."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from defsentflow.storage.paths import data_root, root_path

__all__ = ["artifact_lock"]


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
