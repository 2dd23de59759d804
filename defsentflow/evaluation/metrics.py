"""Correlation and similarity helpers shared by the evaluators."""

from __future__ import annotations

import numpy as np

__all__ = ["paired_cosine", "pearson", "spearman"]


def paired_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of row i of ``a`` with row i of ``b`` (float64; zero vectors give 0)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired_cosine: shapes differ {a.shape} vs {b.shape}")
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    return (a * b).sum(1) / np.maximum(na * nb, 1e-12)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r; NaN when either side is constant or has fewer than two values."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"pearson: need two 1-D arrays of equal length, got {x.shape} and {y.shape}")
    if len(x) < 2:
        return float("nan")
    xc, yc = x - x.mean(), y - y.mean()
    den = np.sqrt((xc * xc).sum() * (yc * yc).sum())
    return float((xc * yc).sum() / den) if den > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of average ranks (ties share their mean rank, as in scipy)."""
    from scipy.stats import rankdata  # lazy: scipy.stats costs most of a second to import

    return pearson(rankdata(x), rankdata(y))
