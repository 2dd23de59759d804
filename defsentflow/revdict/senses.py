"""The sense that matched: for each entry a reverse-dictionary look-up returns, the one of its
definitions nearest to the query.

An index ranks entries by a vector per entry (the mean over its definitions, or its head row), so
a hit says which entry, not which of its senses: `cat` for "a small domesticated feline mammal"
should be shown with "feline mammal usually having thick soft fur...", not with its first listed
definition (a CAT scan). Here each hit's definitions are encoded as queries are (the model's own
sentence space, whatever the index's mode) and the one with the highest cosine to the query is
returned with that cosine. A cosine or hybrid index's build left every definition's vector in the
data root's embedding cache, in the query's space: those are read, not encoded (:func:`stored_vectors`);
others (a head index's) are encoded once and kept in a bounded in-memory cache. Nothing is written
to disk (a served data root may be read-only).

Example:
    >>> senses = SenseMatcher(index.query_vectors, definitions_by_entry(table))
    >>> senses.match(index.query_vectors(["a young dog"]), [["puppy", "dog"]])[0][0]
    Sense(definition='a young dog', score=0.97)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from defsentflow.encoders.cache import text_keys
from defsentflow.encoders.encoding import cache_store
from defsentflow.revdict.index import RevdictIndex

__all__ = ["Sense", "SenseMatcher", "definitions_by_entry", "stored_vectors"]

CACHED_VECTORS = 20_000  # definition vectors kept (about 30 MB at 384 dimensions)


@dataclass(frozen=True)
class Sense:
    """A definition of a hit's entry and its cosine similarity to the query."""

    definition: str
    score: float


def definitions_by_entry(table: pa.Table) -> dict[str, list[str]]:
    """Entry -> its definitions, in the table's order (a dictionary table: entry and definition columns)."""
    out: dict[str, list[str]] = {}
    for entry, definition in zip(table.column("entry").to_pylist(), table.column("definition").to_pylist()):
        if entry is not None and definition:
            out.setdefault(entry, []).append(definition)
    return out


def stored_vectors(index: RevdictIndex) -> Callable[[list[str]], tuple[np.ndarray, np.ndarray | None]] | None:
    """Where a cosine or hybrid index keeps its definitions' vectors: its build encoded every
    definition with the query's model, pooling and length into the data root's embedding cache, so
    a look-up reads them instead of encoding (read only: a served root may be read-only). None for
    a head index (its definitions were encoded by the entry encoder, another space)."""
    meta = index.meta
    if meta.get("mode") not in ("cosine", "hybrid"):
        return None
    store = cache_store(index.path.resolve().parents[1], meta["model"], pooling=meta["pooling"],
                        max_length=int(meta["max_length"]))
    return lambda texts: store.lookup(text_keys(texts))


def _unit(vecs: np.ndarray) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True).clip(min=1e-12)


class SenseMatcher:
    """The nearest definition of each hit, by cosine in the query encoder's space.

    Args:
        encode: the query-side encoder of the index (texts -> vectors), used for definitions too.
        definitions: entry -> its definitions (:func:`definitions_by_entry`).
        cache_size: definition vectors kept between calls.
        stored: texts -> (found mask, their vectors): vectors already made in the query's space, read
            before anything is encoded (:func:`stored_vectors`).
    """

    def __init__(self, encode: Callable[[list[str]], np.ndarray], definitions: Mapping[str, Sequence[str]], *,
                 cache_size: int = CACHED_VECTORS, stored: Callable[[list[str]], tuple[np.ndarray, np.ndarray | None]]
                 | None = None):
        self.encode, self.definitions, self.cache_size, self.stored = encode, definitions, cache_size, stored
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _definition_vectors(self, texts: list[str]) -> dict[str, np.ndarray]:
        with self._lock:
            found = {t: self._vectors[t] for t in texts if t in self._vectors}
            for t in found:
                self._vectors.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing and self.stored is not None:  # vectors the index's build left in the embedding cache
            hit, vecs = self.stored(missing)
            if vecs is not None:
                known = [t for t, h in zip(missing, hit) if h]
                new = dict(zip(known, _unit(vecs)))
                found.update(new)
                with self._lock:
                    self._vectors.update(new)
                missing = [t for t, h in zip(missing, hit) if not h]
        if missing:
            new = dict(zip(missing, _unit(self.encode(missing))))  # one batch for every hit of every query
            found.update(new)
            with self._lock:
                self._vectors.update(new)
                while len(self._vectors) > self.cache_size:
                    self._vectors.popitem(last=False)
        return found

    def match(self, query_vectors: np.ndarray, hits: Sequence[Sequence[str]]) -> list[list[Sense | None]]:
        """For query ``i`` (its vector ``query_vectors[i]``, as the index's query encoder makes it) and
        each entry of ``hits[i]``: the entry's definition nearest to the query, or None for an entry
        without known definitions."""
        wanted = [d for entries in hits for e in entries for d in self.definitions.get(e, ())]
        vectors = self._definition_vectors(wanted) if wanted else {}
        queries = _unit(query_vectors) if len(hits) else np.zeros((0, 0), np.float32)
        out: list[list[Sense | None]] = []
        for q, entries in zip(queries, hits):
            row: list[Sense | None] = []
            for e in entries:
                defs = list(self.definitions.get(e, ()))
                if not defs:
                    row.append(None)
                    continue
                scores = np.stack([vectors[d] for d in defs]) @ q
                best = int(np.argmax(scores))  # ties: the first listed
                row.append(Sense(defs[best], float(scores[best])))
            out.append(row)
        return out
