"""The finite-value check: no NaN or infinite vector or score leaves the product.

A corrupt model (same-size damage to its weights) or index encodes to NaN or overflows; every
place that writes or serves vectors or scores (``encode``, ``revdict``, evaluation, ``serve``)
calls :func:`require_finite` and stops with a one-line error naming the model instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["NonFiniteError", "require_finite", "require_search_scores"]


class NonFiniteError(ValueError):
    """Vectors or scores holding NaN or infinity (one line, naming the model and the check)."""


def require_finite(values: Any, *, model: str, what: str) -> None:
    """Raise :class:`NonFiniteError` if ``values`` (an array, or rows of numbers) holds NaN or infinity.

    Example:
        >>> require_finite(np.array([[0.1, np.nan]]), model="models/pst-x", what="sentence vectors")
        Traceback (most recent call last):
        NonFiniteError: model models/pst-x: finite-value check failed: 1 of 1 sentence vectors ...
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0 or np.isfinite(arr).all():
        return
    rows = ~np.isfinite(arr.reshape(len(arr), -1)).all(axis=1) if arr.ndim else np.array([True])
    first = int(np.argmax(rows))
    raise NonFiniteError(f"model {model}: finite-value check failed: {int(rows.sum())} of {max(len(arr), 1) if arr.ndim else 1} "
                         f"{what} hold NaN or infinity (first at {first}); nothing written or served, "
                         "the model or index files may be corrupt (`defsentflow verify`)")


def require_search_scores(scores: Any, ids: Any, *, model: str, normalized: bool, k: int) -> None:
    """The checks on a faiss answer before it is printed or served: finite scores, within
    ``[-1, 1]`` (a little slack) for a normalised cosine index, and ``k`` hits per query (faiss
    drops NaN rows as id ``-1``)."""
    scores, ids = np.asarray(scores, dtype=np.float64), np.asarray(ids)
    require_finite(scores, model=model, what="search scores")
    if normalized and scores.size and np.abs(scores).max() > 1.0 + 1e-3:
        raise NonFiniteError(f"model {model}: score-range check failed: a cosine score of {np.abs(scores).max():.3g} "
                             "(outside [-1, 1]); nothing served, the index files may be corrupt (`defsentflow verify`)")
    short = (ids[:, :k] < 0).any(axis=1) if ids.ndim == 2 else np.zeros(0, bool)
    if short.any():
        raise NonFiniteError(f"model {model}: result check failed: {int(short.sum())} of {len(ids)} queries got fewer "
                             f"than {k} hits (NaN vectors); nothing served, the model or index files may be corrupt")
