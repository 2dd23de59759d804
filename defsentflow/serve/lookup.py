"""Reverse-dictionary look-ups for the web app: loaded indexes, one micro-batcher each.

Every batch of concurrent look-ups against one index is encoded in one call and searched in
one faiss call. Batches run on a single worker thread, so two encoders never compete for the
CPU cores; indexes are loaded on first use and kept.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

from defsentflow.serve.batcher import MicroBatcher
from defsentflow.serve.catalog import ServedIndex

__all__ = ["Hit", "LookupService"]


@dataclass(frozen=True)
class Hit:
    entry: str
    score: float


class LookupService:
    """Top-k entries for definitions, batched per index.

    Example:
        >>> service = LookupService(max_batch=32)
        >>> await service.lookup(served_index, "a young dog", k=5)
    """

    def __init__(self, *, max_batch: int = 32, max_wait_ms: float = 10.0, device: str = "cpu"):
        self.max_batch, self.max_wait_ms, self.device = max_batch, max_wait_ms, device
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="revdict")
        self._indexes: dict[str, Any] = {}
        self._batchers: dict[str, MicroBatcher] = {}
        self._lock = threading.Lock()

    def _index(self, served: ServedIndex) -> Any:
        from defsentflow.revdict import RevdictIndex

        with self._lock:
            if served.key not in self._indexes:
                self._indexes[served.key] = RevdictIndex(served.path)
            return self._indexes[served.key]

    def search_batch(self, served: ServedIndex, items: Sequence[tuple[str, int]]) -> list[list[Hit]]:
        """Blocking: encode every definition at once, one faiss search with the largest k."""
        index = self._index(served)
        texts = [t for t, _ in items]
        k = max(k for _, k in items)
        scores, ids = index.search_vectors(index.query_vectors(texts, device=self.device), k)
        return [[Hit(index.entries[j], float(s)) for s, j in zip(srow[:kq], irow[:kq]) if j >= 0]
                for (_, kq), srow, irow in zip(items, scores, ids)]

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
        return {key: b.stats.to_dict() for key, b in self._batchers.items()}

    async def close(self) -> None:
        for b in self._batchers.values():
            await b.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
