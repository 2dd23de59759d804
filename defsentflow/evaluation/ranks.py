"""Ranks of a gold candidate among scored candidates, with ties stated, and the figures read off them.

Word prediction and the reverse dictionary both rank the gold entry (or word) of each query among
every candidate's score. Equal scores are common (60,556 of 127,345 OEWN lemmas share their synset
set with another lemma, so their AMP/AC entry vectors are bit-identical), so the rule for a tie
changes the figure and is part of it:

* ``pessimistic`` (the default): the gold candidate after every other candidate with an equal
  score, ``rank = 1 + #higher + #tied``; an all-equal row ranks the gold last (MRR@10 0), as a
  reference that takes ``torch.topk``'s order almost always does;
* ``mid``: a random order of the tied candidates. The rank recorded is the middle one,
  ``1 + #higher + #tied / 2`` (the expected rank), and every figure is its expectation under that
  random order (:func:`rank_metrics` with ``ties="mid"``): MRR the mean of ``1/r`` over the
  ``#tied + 1`` places the gold may take, not ``1/`` the middle place (which understates it, as
  ``1/r`` is convex), top-k the share of those places within k;
* ``optimistic``: before them, ``1 + #higher``.

``#tied`` counts the other candidates whose score equals the gold one's exactly; a query with one
or more is a *tied query*, and every figure reports how many there were (``n_tied``).

Example:
    >>> ranks, tied = gold_ranks(np.zeros((2, 5)), np.array([0, 3]))
    >>> ranks.tolist(), tied.tolist(), rank_metrics(ranks, tied)["mrr@10"]
    ([5.0, 5.0], [4, 4], 0.2)
"""

from __future__ import annotations

from typing import get_args

import numpy as np

from defsentflow.eval_tasks import TieRule

__all__ = ["TOP_K", "TieRule", "chance_mrr", "gold_ranks", "rank_metrics", "rank_with_ties", "validate_ties"]

TOP_K: tuple[int, ...] = (1, 3, 10)


def validate_ties(ties: str) -> TieRule:
    if ties not in get_args(TieRule):
        raise ValueError(f"ties must be one of {get_args(TieRule)}, got {ties!r}")
    return ties  # type: ignore[return-value]


def rank_with_ties(higher: np.ndarray, tied: np.ndarray, ties: TieRule = "pessimistic") -> np.ndarray:
    """Ranks (float64, 1 = first) from the counts of candidates scoring higher and tied per query."""
    higher = np.asarray(higher, dtype=np.float64)
    tied = np.asarray(tied, dtype=np.float64)
    extra = {"pessimistic": tied, "mid": tied / 2.0, "optimistic": 0.0}[validate_ties(ties)]
    return 1.0 + higher + extra


def gold_ranks(scores: np.ndarray, gold: np.ndarray, ties: TieRule = "pessimistic",
               own: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each row's gold column in ``scores`` ``[Q, C]`` under ``ties``, and how many other
    candidates tie with it.

    ``own``: the gold candidate's score when ``scores[q, gold[q]]`` already holds it (default: read
    from ``scores``).
    """
    scores = np.asarray(scores)
    gold = np.asarray(gold, dtype=np.int64)
    if own is None:
        own = scores[np.arange(len(gold)), gold]
    own = np.asarray(own)[:, None]
    higher = (scores > own).sum(axis=1)
    tied = (scores == own).sum(axis=1) - 1   # the gold column equals itself
    return rank_with_ties(higher, tied, ties), tied.astype(np.int64)


def chance_mrr(n_candidates: int, at: int | None = None) -> float:
    """The expected MRR of a uniformly random ranking of ``n_candidates``: H_N / N (``at=10``: MRR@10,
    H_min(10, N) / N)."""
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    top = n_candidates if at is None else min(at, n_candidates)
    return sum(1.0 / k for k in range(1, top + 1)) / n_candidates


def _expected_reciprocal(higher: np.ndarray, tied: np.ndarray, cap: int | None = None) -> np.ndarray:
    """Mean of ``1/r`` over the places ``higher + 1 .. higher + tied + 1`` (``cap``: places above it count 0),
    by harmonic numbers: ``(H(last) - H(first - 1)) / (tied + 1)``."""
    from scipy.special import digamma  # lazy: scipy loads only where it is used

    def harmonic(n: np.ndarray) -> np.ndarray:  # H(n) = digamma(n + 1) + Euler's gamma; H(0) = 0
        return digamma(np.asarray(n, dtype=np.float64) + 1.0) + np.euler_gamma

    first, last = higher + 1.0, higher + tied + 1.0
    if cap is not None:
        first_c, last_c = np.minimum(first, cap + 1.0), np.minimum(last, float(cap))
        return np.where(last_c >= first_c, (harmonic(last_c) - harmonic(first_c - 1.0)) / (tied + 1.0), 0.0)
    return (harmonic(last) - harmonic(first - 1.0)) / (tied + 1.0)


def rank_metrics(ranks: np.ndarray, tied: np.ndarray | None = None, ties: TieRule = "pessimistic") -> dict[str, float]:
    """Figures from 1-based ranks: ``mrr`` over the full ranking, ``mrr@10`` (a rank above 10 counts
    0: DefSent's reference ``get_mrr`` sums 1/rank over the top-10 list and divides by every query;
    its tables print it x 100), top-k accuracy (fractions in [0, 1]) and, given the tie counts,
    ``n_tied``: how many queries had a tie at the gold candidate.

    ``ties="mid"`` (ranks from :func:`gold_ranks` under ``mid``, with ``tied`` given): each figure is
    its expectation under a random order of the tied candidates, e.g. a gold tied with 3 others after 0
    higher has MRR (1 + 1/2 + 1/3 + 1/4) / 4, not 1/2.5. The other rules: the figure of the rank given."""
    ranks = np.asarray(ranks, dtype=np.float64)
    out: dict[str, float]
    if ranks.size == 0:
        out = {"mrr": float("nan"), "mrr@10": float("nan"), **{f"top{k}": float("nan") for k in TOP_K}}
    elif validate_ties(ties) == "mid" and tied is not None:
        t = np.asarray(tied, dtype=np.float64)
        higher = ranks - 1.0 - t / 2.0
        out = {"mrr": float(np.mean(_expected_reciprocal(higher, t))),
               "mrr@10": float(np.mean(_expected_reciprocal(higher, t, cap=10))),
               **{f"top{k}": float(np.mean(np.clip(k - higher, 0.0, t + 1.0) / (t + 1.0))) for k in TOP_K}}
    else:
        recip = 1.0 / ranks
        out = {"mrr": float(np.mean(recip)), "mrr@10": float(np.mean(np.where(ranks <= 10, recip, 0.0))),
               **{f"top{k}": float(np.mean(ranks <= k)) for k in TOP_K}}
    if tied is not None:
        out["n_tied"] = float(np.count_nonzero(np.asarray(tied) > 0))
    return out
