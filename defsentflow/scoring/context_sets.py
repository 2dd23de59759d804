"""Choosing the context set ``C_s`` of a sentence from its retrieved chunks.

The candidates are every slot of every retrieved chunk (see :mod:`defsentflow.scoring.contexts`).
Three strategies (:data:`Selection`, the ``contexts.selection`` config key):

* ``diverse`` (the default, Sun et al.'s two-step selection): candidates are ranked by
  ``S(s, c)`` (ties: lower context id first) and taken greedily while

  - no chosen context comes from the same chunk (at most one context per chunk), and
  - the word-set Jaccard similarity between the sentence before the new slot (``c_{i-1}``) and
    the sentence before every already chosen slot is below ``max_jaccard`` (a slot at a
    document's start has an empty ``c_{i-1}``, which conflicts with nothing),

  until ``size`` contexts are chosen or the candidates run out;
* ``top``: the two-step selection without the diversity rules: the ``size`` best-scored
  candidates (same ranking), several from one chunk allowed;
* ``random``: ``size`` distinct slots drawn uniformly from the whole corpus, neither retrieved
  nor scored (the paper's random-context ablation).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import Literal, get_args

import numpy as np
import scipy.sparse as sp

__all__ = ["SELECTIONS", "Selection", "previous_word_matrix", "random_context_set", "select_context_set",
           "top_context_set"]

Selection = Literal["diverse", "top", "random"]
SELECTIONS: tuple[str, ...] = get_args(Selection)

_BLOCK = 256  # candidates whose conflicts are computed in one sparse product


def _ranking(context_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
    return np.lexsort((context_ids, -np.asarray(scores, dtype=np.float64)))


def top_context_set(context_ids: np.ndarray, scores: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` best-scored candidates (ties: lower id first), best first; no diversity rule."""
    context_ids = np.asarray(context_ids, dtype=np.int64)
    return context_ids[_ranking(context_ids, scores)[:size]]


def random_context_set(n_contexts: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` distinct context ids drawn uniformly from ``0..n_contexts-1`` (all of them if fewer)."""
    return rng.choice(n_contexts, size=min(size, n_contexts), replace=False).astype(np.int64)


def select_context_set(context_ids: np.ndarray, chunk_ids: np.ndarray, scores: np.ndarray, size: int, *,
                       previous_words: Callable[[int], frozenset[str]] | None = None, max_jaccard: float = 0.5,
                       word_matrix: sp.csr_matrix | None = None) -> np.ndarray:
    """Greedy, diversity-constrained top contexts (the ``diverse`` strategy).

    The Jaccard similarities of the candidates' ``c_{i-1}`` word sets are computed a block of
    candidates at a time by one sparse product, so a set of hundreds of contexts costs no
    Python loop over pairs.

    Args:
        context_ids: candidate context ids (slot sentence ids).
        chunk_ids: the chunk each candidate comes from (row-aligned).
        scores: ``S(s, c)`` of each candidate (row-aligned).
        size: ``|C_s|``, the most contexts to choose.
        previous_words: context id -> word set of ``c_{i-1}``.
        max_jaccard: a candidate whose ``c_{i-1}`` reaches this Jaccard similarity with a chosen
            one is skipped.
        word_matrix: instead of ``previous_words``, the same sets as rows of a binary matrix indexed
            by context id (:func:`previous_word_matrix`, built once for a whole corpus): the
            candidates' rows are sliced from it, not built from sets again for every sentence.
            The same choice either way.

    Returns:
        The chosen context ids, best first.
    """
    context_ids = np.asarray(context_ids, dtype=np.int64)
    order = _ranking(context_ids, scores)
    ids = context_ids[order]
    chunks = np.asarray(chunk_ids, dtype=np.int64)[order]
    if word_matrix is not None:
        x = word_matrix[ids]
        sizes = np.diff(x.indptr).astype(np.int64)
    elif previous_words is not None:
        words = [previous_words(int(c)) for c in ids]
        sizes = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        x = _word_matrix(words)
    else:
        raise TypeError("select_context_set needs previous_words or word_matrix")
    chosen: list[int] = []
    chosen_rows: list[int] = []  # rows (in ranking order) of the chosen with a non-empty c_{i-1}
    used_chunks: set[int] = set()
    for start in range(0, len(ids), _BLOCK):
        if len(chosen) >= size:
            break
        # the block's candidates from chunks not used yet; only they can be chosen
        live = np.asarray([j for j in range(start, min(start + _BLOCK, len(ids))) if int(chunks[j]) not in used_chunks
                           and sizes[j]] + [-1], dtype=np.int64)[:-1]
        before = np.asarray(chosen_rows, dtype=np.int64)
        blocked = _conflicts(x, sizes, live, before, max_jaccard).any(axis=1)  # with a context chosen earlier
        within = _conflicts(x, sizes, live, live, max_jaccard)  # with one chosen earlier in this block
        pos = {int(j): i for i, j in enumerate(live)}
        taken = np.zeros(len(live), dtype=bool)  # conflicts with a candidate picked earlier in this block
        for j in range(start, min(start + _BLOCK, len(ids))):
            if len(chosen) >= size:
                break
            chunk = int(chunks[j])
            if chunk in used_chunks:
                continue
            if sizes[j]:
                i = pos[j]
                if blocked[i] or taken[i]:
                    continue
                taken |= within[i]
                chosen_rows.append(j)
            chosen.append(int(ids[j]))
            used_chunks.add(chunk)
    return np.asarray(chosen, dtype=np.int64)


def _conflicts(x: sp.csr_matrix, sizes: np.ndarray, rows: np.ndarray, cols: np.ndarray, max_jaccard: float) -> np.ndarray:
    """``[len(rows), len(cols)]``: Jaccard of the word sets of two candidates reaches ``max_jaccard``.

    The same division as :func:`~defsentflow.scoring.contexts.jaccard`; rows and cols have non-empty sets.
    """
    if not len(rows) or not len(cols):
        return np.zeros((len(rows), len(cols)), dtype=bool)
    inter = (x[rows] @ x[cols].T).toarray()
    return inter / (sizes[rows, None] + sizes[None, cols] - inter) >= max_jaccard


def previous_word_matrix(previous_words: Callable[[int], frozenset[str]], n_contexts: int) -> sp.csr_matrix:
    """Row ``c``: ``previous_words(c)``, the word set of ``c_{i-1}`` of context ``c``, for every context
    id ``0..n_contexts-1`` (what :func:`select_context_set` takes as ``word_matrix``)."""
    return _word_matrix([previous_words(c) for c in range(n_contexts)])


def _word_matrix(words: list[frozenset[str]]) -> sp.csr_matrix:
    """A binary ``[candidates, vocabulary]`` matrix of the word sets (float64: exact small integer products)."""
    vocab = {w: i for i, w in enumerate(set(chain.from_iterable(words)))}  # column order is immaterial
    cols = np.fromiter(map(vocab.__getitem__, chain.from_iterable(words)), dtype=np.int64)
    indptr = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)), out=indptr[1:])
    data = np.ones(len(cols), dtype=np.float64)
    return sp.csr_matrix((data, cols, indptr), shape=(len(words), max(len(vocab), 1)))
