"""Analyse one entry matrix of a PST step: statistics, a scatter plot, a row in ``entry_space_stats``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from defsentflow.entryspace.figures import plot_entry_space
from defsentflow.entryspace.isotropy import entry_space_stats
from defsentflow.entryspace.records import STATS_COLUMNS, entry_plot_path, record_entry_space_stats
from defsentflow.model.entry_matrix import MATRIX_FILE, EntryMatrix
from defsentflow.model.record import matrix_folder
from defsentflow.storage import data_root, hash_bytes, hash_file

__all__ = ["STATS_COLUMNS", "analyse_entry_matrix", "entry_plot_path", "record_entry_space_stats"]

def analyse_entry_matrix(matrix: np.ndarray | str | os.PathLike, *, run_id: str, step: int, seed: int | None = None,
                         matrix_key: str | None = None, catalog: Any = None, root: str | os.PathLike | None = None,
                         plot: bool = True, n_pairs: int = 100_000) -> dict[str, Any]:
    """Statistics and a scatter plot of an entry matrix (array or its folder), recorded in the catalog.

    Args:
        matrix: ``[N, D]`` array or the entry-matrix folder the training stage wrote (a reference to its
            ``matrix.npy``, from before the folder form, reads as the folder).
        matrix_key: the matrix's artifact key; default: the content hash of the file (or array).
        catalog: a :class:`~defsentflow.storage.Catalog` to record in (None: don't record).
        root: data root for the plot (default: the catalog's root, else ``data_root()``).

    Returns:
        The statistics plus ``matrix_key``, ``matrix_path`` and ``plot_path``.
    """
    path = None
    if isinstance(matrix, (str, os.PathLike)):
        path = Path(matrix_folder(str(matrix)))
        arr = EntryMatrix.load(path, mmap=True).matrix  # FileNotFoundError (naming the folder) when it is none
        key = matrix_key or hash_file(path / MATRIX_FILE)
    else:
        arr = np.asarray(matrix)
        key = matrix_key or hash_bytes(np.ascontiguousarray(arr).tobytes())
    stats = entry_space_stats(arr, n_pairs=n_pairs)
    out = None
    if plot:
        base = root if root is not None else (catalog.root if catalog is not None else data_root())
        label = f"PST step {step}" + ("" if seed is None else f" (seed {seed})")
        out = plot_entry_space(arr, entry_plot_path(base, run_id, step, seed), label, stats=stats)
    if catalog is not None:
        record_entry_space_stats(run_id, step, key, stats, catalog=catalog, seed=seed, matrix_path=path, plot_path=out)
    return {**stats, "matrix_key": key, "matrix_path": None if path is None else str(path),
            "plot_path": None if out is None else str(out)}
