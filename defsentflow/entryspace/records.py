"""The catalog's record of an entry matrix's statistics (table ``entry_space_stats``, read by the
``pst_progress`` view), and where its plot goes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from defsentflow.storage import Catalog, check_identifier, root_place

__all__ = ["STATS_COLUMNS", "entry_plot_path", "record_entry_space_stats"]

STATS_COLUMNS = ("n_entries", "dim", "avg_cosine", "top1_var_share", "isoscore", "partition_isotropy",
                 "effective_rank", "mean_norm")


def entry_plot_path(root: str | os.PathLike, run_id: str, step: int, seed: int | None = None) -> Path:
    """``<root>/plots/<run_id>/entry_space/step-03[-seed-1].png`` (the report copies it in)."""
    name = f"step-{int(step):02d}" + ("" if seed is None else f"-seed-{int(seed)}")

    return root_place(root, "plots", check_identifier(run_id, "run id"), "entry_space", f"{name}.png")


def record_entry_space_stats(run_id: str, step: int, matrix_key: str, stats: Mapping[str, Any], *,
                             root: str | os.PathLike | None = None, catalog: Any = None, seed: int | None = None,
                             matrix_path: str | os.PathLike | None = None,
                             plot_path: str | os.PathLike | None = None) -> None:
    """Insert (or replace) the statistics of one entry matrix in ``entry_space_stats``.

    When ``matrix_path`` (an entry-matrix folder) is not given and ``matrix_key`` is a registered
    entry-matrix artifact (a folder holding ``matrix.npy`` and ``entry_space.png``), its folder and
    picture are recorded, so the ``pst_progress`` view can match the matrix to the ``pst_steps``
    rows that name it.

    Args:
        stats: :func:`~defsentflow.report.isotropy.entry_space_stats` output (extra keys ignored).
        root: data root of the catalog (ignored when ``catalog`` is given).
    """
    cat = catalog if catalog is not None else Catalog(root)
    if matrix_path is None:
        found = cat.query("SELECT path FROM artifacts WHERE artifact_key = ?", [matrix_key])
        folder = Path(found[0]["path"]) if found else None
        if folder is not None and folder.is_dir() and (folder / "matrix.npy").is_file():
            matrix_path = folder
            if plot_path is None and (folder / "entry_space.png").is_file():
                plot_path = folder / "entry_space.png"
    cols = ["run_id", "step", "matrix_key", "seed", "matrix_path", *STATS_COLUMNS, "plot_path"]
    values = [run_id, int(step), matrix_key, seed, None if matrix_path is None else cat.rel(matrix_path),
              *[stats.get(c) for c in STATS_COLUMNS], None if plot_path is None else cat.rel(plot_path)]
    cat.execute(f"INSERT OR REPLACE INTO entry_space_stats ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                values)
