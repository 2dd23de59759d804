"""The contextual model ``S(s, c)``: a weighted sum of a discriminative and three generative terms.

    S(s, c) = l1 * log p_disc(y=1 | c_<, s, c_>)
            + l2 * (1/|s|)   log p(s   | c_<, c_>)
            + l3 * (1/|c_<|) log p(c_< | s, c_>)
            + l4 * (1/|c_>|) log p(c_> | c_<, s)

Any object with ``version`` and ``score(sentences, contexts)`` is a :class:`ContextScorer`;
:class:`ContextualScorer` is one too, and adds a fast path for corpus sentences and contexts
given by id (cached vectors instead of text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from defsentflow.scoring.contexts import Context, CorpusLayout
from defsentflow.scoring.vectors import context_vectors
from defsentflow.storage import combine_hashes

__all__ = ["ContextScorer", "ScorerWeights", "ContextualScorer"]


@runtime_checkable
class ContextScorer(Protocol):
    """Scores sentence ``j`` in context ``j``; higher means a better fit."""

    version: str

    def score(self, sentences: Sequence[str], contexts: Sequence[Context]) -> np.ndarray: ...


@dataclass(frozen=True)
class ScorerWeights:
    """``l1`` (discriminative) and ``l2``..``l4`` (generative: sentence, before, after)."""

    l1: float = 1.0
    l2: float = 0.0
    l3: float = 0.0
    l4: float = 0.0

    @property
    def generative(self) -> tuple[float, float, float]:
        return (self.l2, self.l3, self.l4)


class ContextualScorer:
    """``S(s, c)`` from a discriminative scorer and an optional generative one.

    Args:
        weights: the four weights; a non-zero weight needs its scorer.
        discriminative: a :class:`ContextScorer` (usually a ``DiscriminativeScorer``).
        generative: something with ``terms(sentences, contexts) -> [n, 3]`` (``GenerativeScorer``).

    Example:
        >>> S = ContextualScorer(ScorerWeights(1.0), discriminative=disc)
        >>> S.score(["Prices rose."], [Context(("Markets opened.",), ())])
    """

    def __init__(self, weights: ScorerWeights, discriminative: ContextScorer | None = None, generative=None):
        if weights.l1 and discriminative is None:
            raise ValueError("weight l1 is non-zero but no discriminative scorer is configured")
        if any(weights.generative) and generative is None:
            raise ValueError("weights l2..l4 are non-zero but no generative LM is configured")
        self.weights = weights
        self.discriminative = discriminative if weights.l1 else None
        self.generative = generative if any(weights.generative) else None

        self.version = combine_hashes([repr(weights), getattr(self.discriminative, "version", "-"),
                                       getattr(self.generative, "version", "-")])

    def score(self, sentences: Sequence[str], contexts: Sequence[Context]) -> np.ndarray:
        out = np.zeros(len(sentences), dtype=np.float64)
        if self.discriminative is not None:
            out += self.weights.l1 * np.asarray(self.discriminative.score(sentences, contexts), dtype=np.float64)
        if self.generative is not None:
            out += self.generative.terms(sentences, contexts) @ np.asarray(self.weights.generative)
        return out.astype(np.float32)

    def score_ids(self, layout: CorpusLayout, vectors: np.ndarray, texts: Sequence[str], sentence_ids: np.ndarray,
                  context_ids: np.ndarray, k: int) -> np.ndarray:
        """``S`` for sentences and corpus contexts given by id.

        Args:
            layout: the corpus layout (contexts are slots of it).
            vectors: the discriminative encoder's vectors, one row per sentence id (corpus
                sentences first, then any extra sentences).
            texts: the texts by sentence id (same rows as ``vectors``).
            sentence_ids / context_ids: row-aligned ids.
            k: sentences on each side of a slot.
        """
        sid = np.asarray(sentence_ids, dtype=np.int64)
        cid = np.asarray(context_ids, dtype=np.int64)
        out = np.zeros(len(sid), dtype=np.float64)
        if not len(sid):
            return out.astype(np.float32)
        if self.discriminative is not None:
            if hasattr(self.discriminative, "score_index"):
                us, s_index = np.unique(sid, return_inverse=True)
                uc, c_index = np.unique(cid, return_inverse=True)
                left, right = context_vectors(layout, vectors, uc, k)
                disc = self.discriminative.score_index(vectors[us], left, right, s_index, c_index)
            else:
                disc = self.discriminative.score([texts[i] for i in sid], [layout.context(int(c), k) for c in cid])
            out += self.weights.l1 * np.asarray(disc, dtype=np.float64)
        if self.generative is not None:
            terms = self.generative.terms([texts[i] for i in sid], [layout.context(int(c), k) for c in cid])
            out += terms @ np.asarray(self.weights.generative)
        return out.astype(np.float32)
