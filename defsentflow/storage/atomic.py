"""Atomic artifact writes: write under a temporary name, then rename into place.

A crash or ``kill -9`` leaves at most a ``.tmp-*`` file or directory, never a half artifact
under the final name; :func:`clean_stale_temporaries` removes those left by dead processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.storage.outputs import OUTPUT_MARKER, OutputRefusedError
from defsentflow.storage.paths import data_root
from defsentflow.storage.swap import TMP_PREFIX, swap_dir_into_place, temporary_sibling

__all__ = [
    "atomic_path",
    "atomic_dir",
    "write_parquet",
    "write_json",
    "write_npy",
    "clean_stale_temporaries",
    "TMP_PREFIX",
    "pid_alive",
]



@contextlib.contextmanager
def atomic_path(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary file path next to ``final``; rename it into place on success."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(final)
    try:
        yield tmp
        with open(tmp, "rb") as fh:  # data reaches the disk before the rename makes it visible
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


def _replaceable(final: Path) -> None:
    """Raise unless the existing folder ``final`` may be replaced by :func:`atomic_dir`.

    Allowed: an empty folder, a folder inside the data root (other than the root itself; the
    library's own artifact folders) and a folder written by defsentflow (output marker or
    on-disk artifact record). Anything else is a user's folder and is never removed: user-given
    output paths go through :mod:`defsentflow.storage.outputs`.
    """
    resolved, home = final.resolve(), data_root(create=False)
    if final.is_symlink() or not final.is_dir():
        why = "it is a symbolic link" if final.is_symlink() else "it is not a folder"
    elif home.is_relative_to(resolved):
        why = "it is the data root or holds it"
    elif not any(final.iterdir()) or resolved.is_relative_to(home) or (final / OUTPUT_MARKER).is_file() or (final / RECORD_NAME).is_file():
        return
    else:
        why = "it is a non-empty folder outside the data root that defsentflow did not write"
    raise OutputRefusedError(f"refusing to replace {final}: {why}")


RECORD_NAME = ".defsentflow-record.json"  # storage.records: the on-disk record of an artifact


@contextlib.contextmanager
def atomic_dir(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``final``; swap it into place on success.

    An existing ``final`` is replaced only if it is empty, an artifact folder inside the data root
    or a folder defsentflow wrote (see :func:`_replaceable`); otherwise
    :class:`~defsentflow.storage.outputs.OutputRefusedError` is raised before anything is written.
    """
    final = Path(final)
    if final.exists() or final.is_symlink():
        _replaceable(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(final)
    tmp.mkdir()
    try:
        yield tmp
        swap_dir_into_place(tmp, final, _replaceable)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_parquet(table: pa.Table, final: str | os.PathLike, **kwargs: Any) -> Path:
    """Write ``table`` to ``final`` atomically (zstd-compressed by default)."""
    kwargs.setdefault("compression", "zstd")
    with atomic_path(final) as tmp:
        pq.write_table(table, tmp, **kwargs)
    return Path(final)


def write_json(obj: Any, final: str | os.PathLike) -> Path:
    with atomic_path(final) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str))
    return Path(final)


def write_npy(array: np.ndarray, final: str | os.PathLike) -> Path:
    with atomic_path(final) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, array)
    return Path(final)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (OSError, IndexError):
        return True


def clean_stale_temporaries(root: str | os.PathLike) -> list[Path]:
    """Remove ``.tmp-<pid>-*`` files and directories under ``root`` whose process is gone."""
    removed: list[Path] = []
    root = Path(root)
    if not root.exists():
        return removed
    for path in list(root.rglob(f"{TMP_PREFIX}*")):
        parts = path.name[len(TMP_PREFIX):].split("-", 1)
        if parts and parts[0].isdigit() and pid_alive(int(parts[0])) and int(parts[0]) != os.getpid():
            continue
        if parts and parts[0].isdigit() and int(parts[0]) == os.getpid():
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
        removed.append(path)
    return removed
