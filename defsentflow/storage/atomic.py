"""Atomic artifact writes: write under a temporary name, then rename into place.

A crash or ``kill -9`` leaves at most a ``.tmp-<pid>-<hex>-<name>`` file or directory, never a half
artifact under the final name; :func:`clean_stale_temporaries` removes those left by dead processes.
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

from defsentflow.storage.outputs import OutputRefusedError, marker_vouches
from defsentflow.storage.paths import ROOT_FOLDERS, data_root, inside_root
from defsentflow.storage.swap import (
    TMP_PREFIX,
    pid_alive,
    remove,
    stale_temporary,
    swap_dir_into_place,
    temporary_sibling,
)

# The top-level folders of a data root the project writes into (the layout table, storage.paths).
WRITTEN_FOLDERS = ROOT_FOLDERS

__all__ = [
    "WRITTEN_FOLDERS",
    "atomic_path",
    "atomic_dir",
    "write_parquet",
    "write_json",
    "write_npy",
    "clean_stale_temporaries",
    "TMP_PREFIX",
    "pid_alive",
]



def _stays_inside(final: Path) -> None:
    """The data root's path rule for a write: a path of the data root (by name) must resolve inside it,
    so a folder of the root replaced by a symbolic link that leads out receives nothing."""
    home = data_root(create=False)
    try:
        Path(os.path.normpath(final.absolute())).relative_to(home)
    except ValueError:
        return  # not a path of the data root (a user's output, checked by storage.outputs)
    inside_root(home, final)


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary file path next to ``final``; rename it into place on success. A path of the
    data root that resolves outside it is refused (:class:`~defsentflow.storage.paths.OutsideRootError`)."""
    final = Path(final)
    _stays_inside(final)
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
    library's own artifact folders) and a folder whose output marker lists every file in it.
    Anything else is a user's folder and is never removed: user-given output paths go through
    :mod:`defsentflow.storage.outputs`.
    """
    resolved, home = final.resolve(), data_root(create=False)
    if final.is_symlink() or not final.is_dir():
        why = "it is a symbolic link" if final.is_symlink() else "it is not a folder"
    elif home.is_relative_to(resolved):
        why = "it is the data root or holds it"
    elif not any(final.iterdir()) or resolved.is_relative_to(home) or marker_vouches(final):
        return
    else:
        why = "it is a non-empty folder outside the data root that defsentflow did not write"
    raise OutputRefusedError(f"refusing to replace {final}: {why}")


@contextlib.contextmanager
def atomic_dir(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``final``; swap it into place on success.

    An existing ``final`` is replaced only if it is empty, an artifact folder inside the data root
    or a folder defsentflow wrote (see :func:`_replaceable`); otherwise
    :class:`~defsentflow.storage.outputs.OutputRefusedError` is raised before anything is written.
    """
    final = Path(final)
    _stays_inside(final)
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


def clean_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Remove the temporaries of dead processes under ``folder``: names of exactly the pattern the
    project writes (``.tmp-<pid>-<8 hex digits>-<name>``, :data:`~defsentflow.storage.swap.TMP_PATTERN`)
    whose process is gone; never ``.tmp-notes.txt`` or a user's ``.tmp-draft/``.

    In a data root (a folder holding ``catalog.duckdb``, or the configured root) only its top level
    and the folders the project writes (``models/``, ``parquet/``, ``pst/``, ...) are searched, so a
    root that is also a working folder keeps its other files whatever their names.
    """
    removed: list[Path] = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    if (folder / "catalog.duckdb").exists() or folder.resolve() == data_root(create=False):
        places = [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and p.name in WRITTEN_FOLDERS]
        candidates = [*folder.glob(f"{TMP_PREFIX}*"), *(p for d in places for p in d.rglob(f"{TMP_PREFIX}*"))]
    else:
        candidates = list(folder.rglob(f"{TMP_PREFIX}*"))
    for path in candidates:
        if stale_temporary(path) and (path.exists() or path.is_symlink()):
            remove(path)
            removed.append(path)
    return removed
