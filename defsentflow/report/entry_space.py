"""Analyse one entry matrix of a PST step: statistics, a scatter plot, a row in ``entry_space_stats``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from defsentflow.report.isotropy import entry_space_stats
from defsentflow.report.plots import plot_entry_space

__all__ = ["STATS_COLUMNS", "analyse_entry_matrix", "entry_plot_path", "record_entry_space_stats"]

STATS_COLUMNS = ("n_entries", "dim", "avg_cosine", "top1_var_share", "isoscore", "partition_isotropy",
                 "effective_rank", "mean_norm")


def entry_plot_path(root: str | os.PathLike, run_id: str, step: int, seed: int | None = None) -> Path:
    """``<root>/plots/<run_id>/entry_space/step-03[-seed-1].png`` (the report copies it in)."""
    name = f"step-{int(step):02d}" + ("" if seed is None else f"-seed-{int(seed)}")
    from defsentflow.storage import check_identifier, under_root

    return under_root(root, "plots", check_identifier(run_id, "run id"), "entry_space", f"{name}.png")


def record_entry_space_stats(run_id: str, step: int, matrix_key: str, stats: Mapping[str, Any], *,
                             root: str | os.PathLike | None = None, catalog: Any = None, seed: int | None = None,
                             matrix_path: str | os.PathLike | None = None,
                             plot_path: str | os.PathLike | None = None) -> None:
    """Insert (or replace) the statistics of one entry matrix in ``entry_space_stats``.

    When ``matrix_path`` is not given and ``matrix_key`` is a registered artifact whose folder
    holds ``matrix.npy`` (and ``entry_space.png``), those paths are recorded, so the
    ``pst_progress`` view can match the matrix to the ``pst_steps`` rows that name it.

    Args:
        stats: :func:`~defsentflow.report.isotropy.entry_space_stats` output (extra keys ignored).
        root: data root of the catalog (ignored when ``catalog`` is given).
    """
    from defsentflow.storage import Catalog

    cat = catalog if catalog is not None else Catalog(root)
    if matrix_path is None:
        found = cat.query("SELECT path FROM artifacts WHERE artifact_key = ?", [matrix_key])
        folder = Path(found[0]["path"]) if found else None
        if folder is not None and folder.is_dir() and (folder / "matrix.npy").is_file():
            matrix_path = folder / "matrix.npy"
            if plot_path is None and (folder / "entry_space.png").is_file():
                plot_path = folder / "entry_space.png"
    cols = ["run_id", "step", "matrix_key", "seed", "matrix_path", *STATS_COLUMNS, "plot_path"]
    values = [run_id, int(step), matrix_key, seed, None if matrix_path is None else str(matrix_path),
              *[stats.get(c) for c in STATS_COLUMNS], None if plot_path is None else str(plot_path)]
    cat.execute(f"INSERT OR REPLACE INTO entry_space_stats ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                values)


def analyse_entry_matrix(matrix: np.ndarray | str | os.PathLike, *, run_id: str, step: int, seed: int | None = None,
                         matrix_key: str | None = None, catalog: Any = None, root: str | os.PathLike | None = None,
                         plot: bool = True, n_pairs: int = 100_000) -> dict[str, Any]:
    """Statistics and a scatter plot of an entry matrix (array or ``.npy`` path), recorded in the catalog.

    Args:
        matrix: ``[N, D]`` array or the path of the ``.npy`` the training stage wrote.
        matrix_key: the matrix's artifact key; default: the content hash of the file (or array).
        catalog: a :class:`~defsentflow.storage.Catalog` to record in (None: don't record).
        root: data root for the plot (default: the catalog's root, else ``data_root()``).

    Returns:
        The statistics plus ``matrix_key``, ``matrix_path`` and ``plot_path``.
    """
    from defsentflow.storage import data_root, hash_bytes, hash_file

    path = None
    if isinstance(matrix, (str, os.PathLike)):
        path = Path(matrix)
        if not path.is_file():
            raise FileNotFoundError(f"entry matrix not found: {path}")
        arr = np.load(path, mmap_mode="r")
        key = matrix_key or hash_file(path)
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
