"""Pair similarity from context scores, and the score cache that makes labelling cheap.

For sentences ``s1`` and ``s2`` with context sets ``C_s1`` and ``C_s2``::

    C    = C_s1 + C_s2                  (concatenation; a context in both counts twice)
    v_s  = [S(s, c) for c in C]
    sim  = cosine(v_s1, v_s2)

``S(s, c)`` is cached per (sentence id, context id) for one scorer version, so the many pairs
a sentence takes part in reuse its scores.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.storage import write_parquet

__all__ = ["ScoreCache", "pair_similarities", "SCORES_SCHEMA"]

SCORES_SCHEMA = pa.schema([("sentence_id", pa.int64()), ("context_id", pa.int64()), ("score", pa.float32())])


def _keys(sentence_ids: np.ndarray, context_ids: np.ndarray) -> np.ndarray:
    return (np.asarray(sentence_ids, dtype=np.int64) << 32) | np.asarray(context_ids, dtype=np.int64)


class ScoreCache:
    """``S(s, c)`` keyed by (sentence id, context id) for one scorer version; sorted arrays, no dicts.

    Example:
        >>> cache = ScoreCache(scorer.version)
        >>> values = cache.get_or_score(sids, cids, lambda s, c: scorer.score_ids(..., s, c, k))
    """

    def __init__(self, version: str):
        self.version = version
        self._keys = np.zeros(0, dtype=np.int64)
        self._values = np.zeros(0, dtype=np.float32)
        self.misses = 0  # scores computed through this cache (for tests and logs)

    def __len__(self) -> int:
        return len(self._keys)

    def lookup(self, sentence_ids: np.ndarray, context_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(found, values)``; values of missing keys are NaN."""
        keys = _keys(sentence_ids, context_ids)
        pos = np.searchsorted(self._keys, keys)
        pos_c = np.minimum(pos, max(len(self._keys) - 1, 0))
        found = (pos < len(self._keys)) & (self._keys[pos_c] == keys) if len(self._keys) else np.zeros(len(keys), bool)
        values = np.full(len(keys), np.nan, dtype=np.float32)
        values[found] = self._values[pos_c[found]]
        return found, values

    def add(self, sentence_ids: np.ndarray, context_ids: np.ndarray, values: np.ndarray) -> None:
        keys = np.concatenate([self._keys, _keys(sentence_ids, context_ids)])
        vals = np.concatenate([self._values, np.asarray(values, dtype=np.float32)])
        keys, first = np.unique(keys, return_index=True)  # sorted; an existing key keeps its value
        self._keys, self._values = keys, vals[first]

    def get_or_score(self, sentence_ids: np.ndarray, context_ids: np.ndarray,
                     score_fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Cached scores; the missing (distinct) keys are computed by ``score_fn(sids, cids)`` and added."""
        found, values = self.lookup(sentence_ids, context_ids)
        if not found.all():
            miss = _keys(sentence_ids, context_ids)[~found]
            uniq = np.unique(miss)
            new = np.asarray(score_fn(uniq >> 32, uniq & 0xFFFFFFFF), dtype=np.float32)
            self.misses += len(uniq)
            self.add(uniq >> 32, uniq & 0xFFFFFFFF, new)
            values[~found] = new[np.searchsorted(uniq, miss)]
        return values

    def table(self) -> pa.Table:
        return pa.table({"sentence_id": self._keys >> 32, "context_id": self._keys & 0xFFFFFFFF,
                         "score": self._values}, schema=SCORES_SCHEMA)

    def save(self, path: str | os.PathLike) -> Path:
        return write_parquet(self.table(), path)

    @classmethod
    def load(cls, version: str, paths: Sequence[str | os.PathLike]) -> ScoreCache:
        """A cache holding the scores of every Parquet file in ``paths`` (e.g. a harvest's score parts)."""
        cache = cls(version)
        if paths:
            t = pa.concat_tables([pq.read_table(p, schema=SCORES_SCHEMA) for p in paths])
            cache.add(t.column("sentence_id").to_numpy(), t.column("context_id").to_numpy(),
                      t.column("score").to_numpy())
        return cache


def pair_similarities(pairs: np.ndarray, context_sets: Mapping[int, np.ndarray], cache: ScoreCache,
                      score_fn: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None, *,
                      center: bool = False) -> np.ndarray:
    """Cosine of the two sentences' score vectors over ``C_s1 + C_s2`` for each row of ``pairs``.

    Args:
        pairs: ``[P, 2]`` sentence ids.
        context_sets: sentence id -> its context ids ``C_s``.
        cache: scores; missing ones are computed with ``score_fn`` (an error if it is None).
        center: subtract each vector's mean first (Pearson correlation instead of cosine).

    Returns:
        ``[P]`` float32 similarities (0.0 for a pair whose vectors are all zero).
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not len(pairs):
        return np.zeros(0, dtype=np.float32)
    sets = [np.concatenate([context_sets[a], context_sets[b]]) for a, b in pairs.tolist()]
    lengths = np.array([len(c) for c in sets], dtype=np.int64)
    ctx = np.concatenate(sets)
    s1 = np.repeat(pairs[:, 0], lengths)
    s2 = np.repeat(pairs[:, 1], lengths)

    def missing(s: np.ndarray, c: np.ndarray) -> np.ndarray:
        if score_fn is None:
            raise KeyError(f"{len(s)} context scores are not cached and no scorer was given")
        return score_fn(s, c)

    both = cache.get_or_score(np.concatenate([s1, s2]), np.concatenate([ctx, ctx]), missing).astype(np.float64)
    v1, v2 = both[:len(ctx)], both[len(ctx):]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    nonempty = lengths > 0
    if center:
        seg_mean = lambda v: np.repeat(np.add.reduceat(v, starts[nonempty]) / lengths[nonempty], lengths[nonempty])  # noqa: E731
        v1, v2 = v1 - seg_mean(v1), v2 - seg_mean(v2)
    dot = np.zeros(len(pairs))
    n1 = np.zeros(len(pairs))
    n2 = np.zeros(len(pairs))
    dot[nonempty] = np.add.reduceat(v1 * v2, starts[nonempty])
    n1[nonempty] = np.add.reduceat(v1 * v1, starts[nonempty])
    n2[nonempty] = np.add.reduceat(v2 * v2, starts[nonempty])
    denom = np.sqrt(n1 * n2)
    return np.where(denom > 0, dot / np.where(denom > 0, denom, 1.0), 0.0).astype(np.float32)
