"""Pictures of an entry space (the DefSent+ entry matrix): two scatter panels, and the figure
helpers the run report's other plots share.

Figures are drawn on a bare ``matplotlib.figure.Figure`` with the Agg canvas, never through
``pyplot``: no global backend switch, no GUI, safe in worker threads. Each PNG is written under a
temporary name and renamed into place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from defsentflow.storage.atomic import atomic_path

__all__ = ["new_figure", "plot_entry_space", "save_figure", "svd_2d", "whitened_pca_2d"]


def new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib loads only when a figure is drawn
    from matplotlib.figure import Figure  # lazy: matplotlib loads only when a figure is drawn

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")  # room for suptitle and legends
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, out_png: str | os.PathLike) -> Path:
    out = Path(out_png)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", bbox_inches="tight")
    return out


def _sample(matrix: np.ndarray, max_points: int, seed: int) -> np.ndarray:
    x = np.asarray(matrix, dtype=np.float64)
    if len(x) > max_points:
        x = x[np.sort(np.random.default_rng(seed).choice(len(x), max_points, replace=False))]
    return x


def svd_2d(matrix: np.ndarray) -> np.ndarray:
    """Coordinates on the top two right singular vectors of the *uncentred* matrix.

    Without centring, the common offset of an anisotropic space shows as a cloud far from the
    origin (the "narrow cone"), as in the DefSent+ paper's figures.
    """
    x = np.asarray(matrix, dtype=np.float64)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    return x @ vt[:2].T


def whitened_pca_2d(matrix: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """The first two principal components, each scaled to unit variance (PCA whitening)."""
    x = np.asarray(matrix, dtype=np.float64)
    xc = x - x.mean(0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    std = s[:2] / np.sqrt(max(len(x) - 1, 1))
    return (xc @ vt[:2].T) / np.maximum(std, eps)


def plot_entry_space(matrix: np.ndarray, out_png: str | os.PathLike, title: str, *,
                     stats: Mapping[str, Any] | None = None, max_points: int = 5000, seed: int = 0) -> Path:
    """Two scatter panels of an entry matrix: 2-D SVD (uncentred) and whitened 2-D PCA.

    Args:
        matrix: ``[N, D]`` entry vectors.
        out_png: where the PNG goes.
        title: figure title (e.g. ``"PST step 2 (seed 1)"``).
        stats: optional :func:`~defsentflow.report.isotropy.entry_space_stats` output for the caption.
        max_points: rows drawn (a fixed random sample when there are more).
    """
    x = _sample(matrix, max_points, seed)
    if x.ndim != 2 or len(x) < 3 or x.shape[1] < 2:
        raise ValueError(f"plot_entry_space needs a [N>=3, D>=2] matrix, got shape {np.shape(matrix)}")
    fig = new_figure(9.0, 4.4)
    ax1, ax2 = fig.subplots(1, 2)
    a = svd_2d(x)
    size = 3 if len(x) > 2000 else 8
    ax1.scatter(a[:, 0], a[:, 1], s=size, alpha=0.35, color="#1f77b4", linewidths=0)
    ax1.scatter([0], [0], marker="+", s=80, color="#d62728", label="origin")
    ax1.set_aspect("equal", adjustable="datalim")
    ax1.set_title("2-D SVD (uncentred)")
    ax1.set_xlabel("singular direction 1")
    ax1.set_ylabel("singular direction 2")
    ax1.legend(loc="best", fontsize=8)
    b = whitened_pca_2d(x)
    ax2.scatter(b[:, 0], b[:, 1], s=size, alpha=0.35, color="#2ca02c", linewidths=0)
    ax2.set_aspect("equal", adjustable="datalim")
    ax2.set_title("whitened PCA (PC1, PC2)")
    ax2.set_xlabel("PC1 / sd")
    ax2.set_ylabel("PC2 / sd")
    for ax in (ax1, ax2):
        ax.grid(True, linewidth=0.3, alpha=0.5)
    caption = f"{title}  ({len(np.asarray(matrix))} entries, dim {np.shape(matrix)[1]})"
    if stats:
        caption += "\n" + "  ".join(f"{k}={stats[k]:.3f}" for k in ("avg_cosine", "top1_var_share", "isoscore")
                                    if k in stats and stats[k] is not None)
    fig.suptitle(caption, fontsize=10)
    return save_figure(fig, out_png)
