"""Choosing the context set ``C_s`` of a sentence from its retrieved chunks.

The candidates are every slot of every retrieved chunk (see :mod:`defsentflow.scoring.contexts`).
They are ranked by ``S(s, c)`` (ties: lower context id first) and taken greedily while

* no chosen context comes from the same chunk (at most one context per chunk), and
* the word-set Jaccard similarity between the sentence before the new slot (``c_{i-1}``) and
  the sentence before every already chosen slot is below ``max_jaccard`` (a slot at a
  document's start has an empty ``c_{i-1}``, which conflicts with nothing),

until ``size`` contexts are chosen or the candidates run out.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from defsentflow.scoring.contexts import jaccard

__all__ = ["select_context_set"]


def select_context_set(context_ids: np.ndarray, chunk_ids: np.ndarray, scores: np.ndarray, size: int, *,
                       previous_words: Callable[[int], frozenset[str]], max_jaccard: float = 0.5) -> np.ndarray:
    """Greedy, diversity-constrained top contexts.

    Args:
        context_ids: candidate context ids (slot sentence ids).
        chunk_ids: the chunk each candidate comes from (row-aligned).
        scores: ``S(s, c)`` of each candidate (row-aligned).
        size: ``|C_s|``, the most contexts to choose.
        previous_words: context id -> word set of ``c_{i-1}``.
        max_jaccard: a candidate whose ``c_{i-1}`` reaches this Jaccard similarity with a chosen
            one is skipped.

    Returns:
        The chosen context ids, best first.
    """
    context_ids = np.asarray(context_ids, dtype=np.int64)
    order = np.lexsort((context_ids, -np.asarray(scores, dtype=np.float64)))
    chosen: list[int] = []
    chosen_words: list[frozenset[str]] = []
    used_chunks: set[int] = set()
    for j in order:
        if len(chosen) >= size:
            break
        chunk = int(chunk_ids[j])
        if chunk in used_chunks:
            continue
        words = previous_words(int(context_ids[j]))
        if words and _conflicts(words, chosen_words, max_jaccard):
            continue
        chosen.append(int(context_ids[j]))
        chosen_words.append(words)
        used_chunks.add(chunk)
    return np.asarray(chosen, dtype=np.int64)


def _conflicts(words: frozenset[str], chosen: list[frozenset[str]], max_jaccard: float) -> bool:
    n = len(words)
    for w in chosen:
        m = len(w)
        # J <= min(n, m) / max(n, m): sets of very different sizes cannot conflict
        if m and min(n, m) >= max_jaccard * max(n, m) and jaccard(words, w) >= max_jaccard:
            return True
    return False
