"""Sentence contexts in a corpus and the candidate contexts a retrieved chunk offers.

A **context** of the sentence ``c_i`` of a document is ``(c_<i, c_>i)``: the up to ``k``
sentences before it and the up to ``k`` sentences after it *in the same document* (shorter at
the document's edges, empty on the side where there is nothing).

A retrieved chunk (consecutive sentences ``first..last`` of one document) offers one candidate
context per **slot**: for every position ``i`` in ``first..last``, the chunk's sentence ``c_i``
is taken out and the sentence being scored is put in its place. The slot's context is then
exactly the corpus context of ``c_i``: the ``k`` sentences before ``i`` and the ``k`` after
``i`` within the *document* (not clipped to the chunk, so a slot at a paragraph edge still sees
the neighbouring paragraph, as ``c_i`` itself did and as the discriminative scorer was trained).
So a context is identified by the sentence id of its slot: ``context_id == i``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["Context", "CorpusLayout", "word_set", "jaccard"]

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Context:
    """The sentences before and after a slot, in document order.

    Example:
        >>> Context(before=("It rained.",), after=("The roads flooded.",))
    """

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


def word_set(text: str) -> frozenset[str]:
    """Lower-cased word types of ``text`` (``\\w+`` runs)."""
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets; 0.0 when both are empty (nothing to call a duplicate)."""
    if not a and not b:
        return 0.0
    inter = len(a & b) if len(a) <= len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter)


@dataclass(frozen=True)
class CorpusLayout:
    """Where each sentence sits: its document's bounds and its chunk; built from the corpus tables.

    Attributes:
        texts: sentence texts indexed by ``sentence_id``.
        doc_start: per sentence, the id of its document's first sentence.
        doc_end: per sentence, one past the id of its document's last sentence.
        chunk_first / chunk_last: per chunk, its first and last (inclusive) sentence id.
        chunk_of: per sentence, the chunk that holds it (-1 if none).
    """

    texts: tuple[str, ...]
    doc_start: np.ndarray
    doc_end: np.ndarray
    chunk_first: np.ndarray
    chunk_last: np.ndarray
    chunk_of: np.ndarray

    @classmethod
    def from_tables(cls, sentences: pa.Table, chunks: pa.Table) -> CorpusLayout:
        """Build from ``load_sentences``/``load_chunks`` tables; checks ids are dense and in document order."""
        sid = sentences.column("sentence_id").to_numpy()
        n = len(sid)
        if not np.array_equal(sid, np.arange(n)):
            raise ValueError("sentences table: sentence_id must be dense 0..N-1 in order")
        docs = sentences.column("doc_id").to_pylist()
        starts = np.flatnonzero([True] + [docs[i] != docs[i - 1] for i in range(1, n)]) if n else np.zeros(0, int)
        if len(set(docs)) != len(starts):
            raise ValueError("sentences table: the sentences of a document must be consecutive")
        bounds = np.append(starts, n)
        lengths = np.diff(bounds)
        doc_start = np.repeat(bounds[:-1], lengths).astype(np.int64)
        doc_end = np.repeat(bounds[1:], lengths).astype(np.int64)
        first = chunks.column("first_sentence_id").to_numpy().astype(np.int64)
        last = chunks.column("last_sentence_id").to_numpy().astype(np.int64)
        if len(first) and (first.min() < 0 or last.max() >= n or np.any(last < first)
                           or np.any(doc_start[first] != doc_start[last])):
            raise ValueError("chunks table: every chunk must span consecutive sentences of one document")
        chunk_of = np.full(n, -1, dtype=np.int64)
        for c, (a, b) in enumerate(zip(first, last)):
            chunk_of[a:b + 1] = c
        return cls(tuple(sentences.column("text").to_pylist()), doc_start, doc_end, first, last, chunk_of)

    @property
    def n_sentences(self) -> int:
        return len(self.texts)

    def context_bounds(self, context_ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Half-open id ranges ``[ls, le)`` before and ``[rs, re)`` after each slot, within its document."""
        i = np.asarray(context_ids, dtype=np.int64)
        ls = np.maximum(self.doc_start[i], i - k)
        rs = i + 1
        re_ = np.minimum(self.doc_end[i], i + k + 1)
        return ls, i, rs, re_

    def context(self, context_id: int, k: int) -> Context:
        """The :class:`Context` of slot ``context_id`` as texts."""
        ls, le, rs, re_ = (int(x[0]) for x in self.context_bounds(np.array([context_id]), k))
        return Context(self.texts[ls:le], self.texts[rs:re_])

    def slots(self, chunk_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Candidate context ids of ``chunk_ids`` (every slot of every chunk) and the chunk of each."""
        chunk_ids = np.asarray(chunk_ids, dtype=np.int64)
        lengths = self.chunk_last[chunk_ids] - self.chunk_first[chunk_ids] + 1
        owner = np.repeat(chunk_ids, lengths)
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return self.chunk_first[owner] + offsets, owner

    def previous_sentence(self, context_id: int) -> str:
        """``c_{i-1}``, the sentence just before the slot, or ``""`` at a document's start."""
        return self.texts[context_id - 1] if context_id > self.doc_start[context_id] else ""
