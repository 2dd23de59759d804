"""The harvest's labeller applied to any sentence pairs: Sun et al.'s "Origin" similarity.

The harvest labels corpus sentences; to measure those labels against human judgments the same
labeller (retrieval, ``S(s, c)``, context-set selection, Eq. 4's cosine of score vectors) is
applied to sentences from outside the corpus, e.g. the STS pairs. They are appended to the
harvest's sentence pool as extra rows (ids after the corpus and its extras); contexts still come
from the corpus only.

One :class:`PairLabeller` serves several settings (:class:`OriginPoint`): retrieval is done once
at the largest ``top_n`` asked for (a smaller ``top_n`` is a prefix of it) and every
``S(s, c)`` is computed once in its :class:`ScoreCache`, so a sweep over ``|C_s|`` and the
selection strategy pays for scoring once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from defsentflow.config_tools import Similarity
from defsentflow.progress import progress
from defsentflow.scoring.context_sets import SELECTIONS, Selection
from defsentflow.scoring.harvest import HarvestResources, choose_context_sets
from defsentflow.scoring.pair_similarity import ScoreCache, pair_similarities

__all__ = ["OriginPoint", "PairLabeller"]


@dataclass(frozen=True)
class OriginPoint:
    """One labeller setting: ``|C_s|``, the selection strategy and the chunks retrieved per sentence.

    Example:
        >>> OriginPoint(set_size=500, selection="diverse", top_n=500).name
        'diverse-c500-n500'
    """

    set_size: int = 500
    selection: Selection = "diverse"
    top_n: int = 500
    similarity: Similarity = "cosine"

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection {self.selection!r} is not one of {', '.join(SELECTIONS)}")
        if self.similarity not in ("cosine", "centered_cosine"):
            raise ValueError(f"similarity {self.similarity!r} is not one of cosine, centered_cosine")
        if self.set_size < 1 or self.top_n < 1:
            raise ValueError("set_size and top_n must be >= 1")
        if self.selection != "random" and self.top_n < self.set_size:
            raise ValueError(f"top_n ({self.top_n}) must be >= set_size ({self.set_size}): C_s takes at most one "
                             "context per chunk")

    @property
    def name(self) -> str:
        suffix = "-centered" if self.similarity == "centered_cosine" else ""
        return f"{self.selection}-c{self.set_size}-n{self.top_n}{suffix}"


class PairLabeller:
    """Contextual similarity of pairs of arbitrary sentences, with the harvest's resources.

    Args:
        res: the harvest's resources (corpus layout, texts, vectors, scorer, search).
        texts: the sentences to label (distinct texts; pairs refer to them by position).
        vectors: their vectors from the scorer's encoder (row-aligned with ``texts``).
        k: sentences on each side of a slot (the scorer's ``k``).
        max_jaccard: the ``diverse`` selection's threshold.
        seed: seeds the ``random`` selection.

    Example:
        >>> labeller = PairLabeller(res, ["A man plays.", "A man is playing."], vectors)
        >>> labeller.similarities(np.array([[0, 1]]), OriginPoint(20, "diverse", 100))
    """

    def __init__(self, res: HarvestResources, texts: Sequence[str], vectors: np.ndarray, *, k: int = 1,
                 max_jaccard: float = 0.5, seed: int = 0):
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        self.offset = len(res.texts)
        self.res = HarvestResources(res.layout, [*res.texts, *texts],
                                    np.concatenate([np.asarray(res.vectors, dtype=np.float32),
                                                    np.asarray(vectors, dtype=np.float32)]), res.scorer, res.search)
        self.k, self.max_jaccard, self.seed = k, max_jaccard, seed
        self.cache = ScoreCache(res.scorer.version)
        self._retrieved: dict[int, np.ndarray] = {}
        self._top_n = 0
        self._sets: dict[tuple[str, int], tuple[int, dict[int, np.ndarray]]] = {}

    def _score(self, sentence_ids: np.ndarray, context_ids: np.ndarray) -> np.ndarray:
        return self.res.score_ids(sentence_ids, context_ids, self.k)

    def retrieved(self, ids: np.ndarray, top_n: int) -> dict[int, np.ndarray]:
        """Chunk ids retrieved for each sentence id, best first (searched once at the largest ``top_n``)."""
        ids = np.asarray(ids, dtype=np.int64)
        todo = ids if top_n > self._top_n else np.asarray([i for i in ids.tolist() if i not in self._retrieved],
                                                           dtype=np.int64)
        if len(todo):
            n = max(top_n, self._top_n)
            chunk_ids, _ = self.res.search([self.res.texts[i] for i in todo.tolist()], n)
            for i, row in zip(todo.tolist(), np.asarray(chunk_ids)):
                row = row[row >= 0]
                self._retrieved[i] = row[np.sort(np.unique(row, return_index=True)[1])]  # rank order kept
            if top_n > self._top_n:
                self._top_n = top_n
                for i in set(self._retrieved) - set(todo.tolist()):  # a shorter earlier search: redo at n
                    del self._retrieved[i]
        return {i: self._retrieved[i][:top_n] for i in ids.tolist()}

    def context_sets(self, positions: np.ndarray, point: OriginPoint, *, block: int = 1024) -> dict[int, np.ndarray]:
        """``C_s`` of the sentences at ``positions`` (keys are pool ids: ``offset + position``).

        The ``diverse`` and ``top`` selections are greedy in one fixed ranking, so a smaller set is
        the first ``set_size`` of a larger one: a larger set chosen before is cut, not recomputed.
        """
        ids = np.unique(np.asarray(positions, dtype=np.int64)) + self.offset
        key = (point.selection, point.top_n)
        have_size, have = self._sets.get(key, (0, {}))
        if point.selection != "random" and have_size >= point.set_size and all(i in have for i in ids.tolist()):
            return {i: have[i][:point.set_size] for i in ids.tolist()}
        out: dict[int, np.ndarray] = {}
        starts = range(0, len(ids), block)
        for a in progress(starts, desc=f"origin {point.name}", unit="block", total=len(starts)):
            part = ids[a:a + block]
            retrieved = {} if point.selection == "random" else self.retrieved(part, point.top_n)
            out.update(choose_context_sets(self.res, part, retrieved, self.cache, self._score, size=point.set_size,
                                           selection=point.selection, max_jaccard=self.max_jaccard, seed=self.seed))
        if point.selection != "random" and point.set_size >= have_size:
            self._sets[key] = (point.set_size, out)
        return out

    def similarities(self, pairs: np.ndarray, point: OriginPoint) -> np.ndarray:
        """Eq. 4 (or its centred form, ``point.similarity``) for each row of ``pairs`` (positions into ``texts``)."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        sets = self.context_sets(pairs.ravel(), point)
        return pair_similarities(pairs + self.offset, sets, self.cache, self._score,
                                 center=point.similarity == "centered_cosine")
