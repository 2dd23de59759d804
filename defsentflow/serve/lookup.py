"""Reverse-dictionary look-ups for the web app: loaded indexes, one micro-batcher each.

Every batch of concurrent look-ups against one index is encoded in one call and searched in
one faiss call. Batches run on a single worker thread, so two encoders never compete for the
CPU cores; the thread's torch and faiss (OpenMP) thread counts are set once, to ``threads``
(default: the CPU cores), when it starts. Indexes are loaded on first use and kept; a cosine
index is queried with :class:`~defsentflow.serve.encode.PackedQueryEncoder` (no padding) where
that reproduces the padded encoder, and searched by :class:`~defsentflow.serve.search.FlatSearch`
(exact top-k, fast for batches); each hit then gets the definition of its entry nearest to the
query (:mod:`defsentflow.revdict.senses`). Time spent encoding, searching and matching senses is
kept per index.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from defsentflow.encoders.finite import require_finite, require_search_scores
from defsentflow.revdict import RevdictIndex
from defsentflow.revdict.senses import SenseMatcher, stored_vectors
from defsentflow.serve.batcher import MicroBatcher
from defsentflow.serve.catalog import ServedIndex
from defsentflow.serve.encode import PackedQueryEncoder
from defsentflow.serve.search import FlatSearch

__all__ = ["Hit", "LookupService"]


@dataclass(frozen=True)
class Hit:
    """An entry, its score and, where its definitions are known, the one nearest to the query
    (:class:`~defsentflow.revdict.senses.SenseMatcher`) with that definition's cosine to the query."""

    entry: str
    score: float
    definition: str | None = None
    definition_score: float | None = None


def _set_worker_threads(threads: int) -> None:
    """In the worker thread: OpenMP's thread count is a per-thread setting, so it is set here."""
    import faiss  # lazy: faiss loads only when a dense index is built or searched
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)


class _Searcher:
    """One loaded index, its query encoder and the seconds spent in each stage."""

    def __init__(self, served: ServedIndex, device: str, prefilter: bool | None,
                 definitions: Mapping[str, Sequence[str]] | None = None):
        self.index = RevdictIndex(served.path)
        self.packed = PackedQueryEncoder.for_index(self.index.meta, device=device)
        self.flat = FlatSearch(self.index, prefilter=prefilter if device == "cpu" else False)
        self.device = device
        self.senses = (SenseMatcher(self.vectors, definitions, stored=stored_vectors(self.index))
                       if definitions else None)
        self.encode_s = self.search_s = self.senses_s = 0.0

    def vectors(self, texts: list[str]) -> Any:
        if self.packed is not None:
            return self.packed.encode(texts)
        return self.index.query_vectors(texts, device=self.device)

    def __call__(self, items: Sequence[tuple[str, int]]) -> list[list[Hit]]:
        t0 = time.perf_counter()
        vecs = self.vectors([t for t, _ in items])
        t1 = time.perf_counter()
        model, k = str(self.index.meta["model"]), max(k for _, k in items)
        require_finite(vecs, model=model, what="query vectors")
        scores, ids = self.flat.search(vecs, k)
        require_search_scores(scores, ids, model=model, normalized=bool(self.index.meta.get("normalize")),
                              k=min(k, len(self.index.entries)))
        self.encode_s += t1 - t0
        self.search_s += time.perf_counter() - t1
        entries = self.index.entries
        hits = [[Hit(entries[j], float(s)) for s, j in zip(srow[:kq], irow[:kq]) if j >= 0]
                for (_, kq), srow, irow in zip(items, scores.tolist(), ids.tolist())]
        if self.senses is None:
            return hits
        t2 = time.perf_counter()
        senses = self.senses.match(vecs, [[h.entry for h in row] for row in hits])
        self.senses_s += time.perf_counter() - t2
        return [[Hit(h.entry, h.score, *((m.definition, m.score) if m else (None, None))) for h, m in zip(row, found)]
                for row, found in zip(hits, senses)]


class LookupService:
    """Top-k entries for definitions, batched per index.

    Args:
        max_batch, max_wait_ms: the micro-batcher's (see :class:`MicroBatcher`).
        device: where query encoders run.
        threads: torch and faiss threads of the worker (default: the CPU cores).
        definitions: served index -> entry -> its definitions (None: hits without their matched
            definition); each hit then carries the definition nearest to the query.
        prefilter: batches scored on a bf16 copy first and rescored exactly (see
            :class:`~defsentflow.serve.search.FlatSearch`; default: where the CPU has bf16 dot products);
            False: faiss's flat search only.

    Example:
        >>> service = LookupService(max_batch=32)
        >>> await service.lookup(served_index, "a young dog", k=5)
    """

    def __init__(self, *, max_batch: int = 32, max_wait_ms: float = 10.0, device: str = "cpu",
                 threads: int | None = None, prefilter: bool | None = None,
                 definitions: Callable[[ServedIndex], Mapping[str, Sequence[str]]] | None = None):
        self.max_batch, self.max_wait_ms, self.device, self.prefilter = max_batch, max_wait_ms, device, prefilter
        self.definitions = definitions
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="revdict",
                                           initializer=_set_worker_threads, initargs=(self.threads,))
        self._searchers: dict[str, _Searcher] = {}
        self._loading: dict[str, threading.Lock] = {}
        self._batchers: dict[str, MicroBatcher] = {}
        self._lock = threading.Lock()

    def load(self, served: ServedIndex) -> None:
        """Load ``served``'s index now (a thread of the caller's: the look-up thread keeps answering
        from the indexes it has; an alias switches to a new model only once this returns)."""
        self._searcher(served)

    def _searcher(self, served: ServedIndex) -> _Searcher:
        with self._lock:
            found = self._searchers.get(served.key)
            if found is not None:
                return found
            loading = self._loading.setdefault(served.key, threading.Lock())
        with loading:  # one load per index; look-ups of the other indexes go on meanwhile
            with self._lock:
                found = self._searchers.get(served.key)
            if found is None:
                known = self.definitions(served) if self.definitions is not None else None
                found = _Searcher(served, self.device, self.prefilter, known)
                with self._lock:
                    self._searchers[served.key] = found
            return found

    def search_batch(self, served: ServedIndex, items: Sequence[tuple[str, int]]) -> list[list[Hit]]:
        """Blocking: encode every definition at once, one faiss search with the largest k."""
        return self._searcher(served)(items)

    def _batcher(self, served: ServedIndex) -> MicroBatcher:
        b = self._batchers.get(served.key)
        if b is None:
            b = MicroBatcher(lambda items, s=served: self.search_batch(s, items), max_batch=self.max_batch,
                             max_wait_ms=self.max_wait_ms, executor=self.executor)
            self._batchers[served.key] = b
        return b

    async def lookup(self, served: ServedIndex, text: str, k: int) -> list[Hit]:
        return await self._batcher(served).submit((text, k))

    def stats(self) -> dict[str, Any]:
        out = {}
        for key, b in self._batchers.items():
            s = self._searchers.get(key)
            stages = {} if s is None else {"encode_seconds": round(s.encode_s, 6),
                                           "search_seconds": round(s.search_s, 6),
                                           "senses_seconds": round(s.senses_s, 6), "packed": s.packed is not None,
                                           "prefilter": s.flat.prefilter, "prefilter_fallbacks": s.flat.fallbacks}
            out[key] = {**b.stats.to_dict(), **stages}
        return out

    async def close(self) -> None:
        for b in self._batchers.values():
            await b.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
