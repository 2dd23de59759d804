"""Top-N selection over score rows with a deterministic order: score descending, then id ascending."""

from __future__ import annotations

import numpy as np

__all__ = ["top_n_rows", "rank_order"]


def rank_order(scores: np.ndarray) -> np.ndarray:
    """Full ranking of one score vector: score descending, ties by ascending id (the reference order)."""
    return np.lexsort((np.arange(scores.shape[0]), -scores))


def top_n_rows(scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` best columns of every row of a dense ``[Q, M]`` score matrix.

    ``np.argpartition`` finds the candidates; ties at the cut-off are settled by ascending id, so the
    result equals the first ``n`` entries of :func:`rank_order` for every row.

    Returns:
        ``(ids int64 [Q, n], scores [Q, n])`` with ``n`` capped at ``M``.
    """
    q, m = scores.shape
    n = min(n, m)
    if n == 0:
        return np.zeros((q, 0), np.int64), np.zeros((q, 0), scores.dtype)
    if n < m:
        cand = np.argpartition(-scores, n - 1, axis=1)[:, :n]
    else:
        cand = np.broadcast_to(np.arange(m), (q, m)).copy()
    cand_scores = np.take_along_axis(scores, cand, axis=1)
    if n < m:
        # Rows where more columns tie with the n-th best score than fit: take the lowest ids among the tied.
        threshold = cand_scores.min(axis=1)
        n_at_least = (scores >= threshold[:, None]).sum(axis=1)
        for r in np.flatnonzero(n_at_least > n):
            row, t = scores[r], threshold[r]
            above = np.flatnonzero(row > t)
            tied = np.flatnonzero(row == t)[: n - above.size]
            cand[r] = np.concatenate([above, tied])
            cand_scores[r] = row[cand[r]]
    order = np.lexsort((cand, -cand_scores), axis=1)
    ids = np.take_along_axis(cand, order, axis=1).astype(np.int64, copy=False)
    return ids, np.take_along_axis(cand_scores, order, axis=1)
