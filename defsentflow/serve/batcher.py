"""An asyncio micro-batcher: concurrent requests share one call of a batch function.

Requests wait in a queue; one worker takes every request waiting (up to ``max_batch``), runs
the batch function once in a worker thread, and hands each caller its own result. While a batch
runs, new requests pile up and form the next one, so under load the encoder runs once per batch
instead of once per request. ``max_batch=1`` is the one-request-at-a-time loop.

How long to wait for company: as many requests as were outstanding at once during the last
batch are expected (clients that just got their answers send their next question a moment
later), for at most ``max_wait_ms``. A full-index search costs about the same for 1 query as
for 16, so a wave of requests split into two alternating half-batches would nearly double the
cost; a lone client (one request outstanding) never waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["MicroBatcher"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _BatchStats:
    batches: int = 0
    items: int = 0
    largest: int = 0
    seconds: float = 0.0     # time spent in the batch function
    queued: float = 0.0      # summed over items: from submit to the start of their batch

    def to_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "items": self.items, "largest": self.largest,
                "mean_batch": round(self.items / self.batches, 2) if self.batches else 0.0,
                "seconds": round(self.seconds, 6), "queued_seconds": round(self.queued, 6)}


@dataclass
class _Pending(Generic[T]):
    item: T
    future: asyncio.Future = field(repr=False)
    since: float = 0.0


class MicroBatcher(Generic[T, R]):
    """Batch concurrent ``submit`` calls into calls of ``fn(items) -> results``.

    Args:
        fn: a blocking function of a list of items, returning one result per item, in order.
        max_batch: most items per call.
        max_wait_ms: the longest the first item of a batch waits for company.
        executor: where ``fn`` runs (default: the loop's default executor).

    Example:
        >>> batcher = MicroBatcher(lambda xs: [x * 2 for x in xs], max_batch=16)
        >>> await batcher.submit(21)
        42
    """

    def __init__(self, fn: Callable[[Sequence[T]], Sequence[R]], *, max_batch: int = 32, max_wait_ms: float = 10.0,
                 executor: Executor | None = None):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.fn, self.max_batch, self.max_wait = fn, max_batch, max(0.0, max_wait_ms) / 1000.0
        self.executor = executor
        self.stats = _BatchStats()
        self._expect = 1       # how many requests to wait for: the peak outstanding during the last batch
        self._outstanding = 0  # submitted, not yet answered
        self._peak = 0
        self._queue: asyncio.Queue[_Pending[T]] | None = None
        self._worker: asyncio.Task | None = None

    def _ensure_worker(self) -> asyncio.Queue:
        if self._queue is None or self._worker is None or self._worker.done():
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._run())
        return self._queue

    async def submit(self, item: T) -> R:
        """Queue ``item`` and wait for its result (an exception of the batch is raised here)."""
        queue = self._ensure_worker()
        fut = asyncio.get_running_loop().create_future()
        self._outstanding += 1
        self._peak = max(self._peak, self._outstanding)
        try:
            await queue.put(_Pending(item, fut, time.perf_counter()))
            return await fut
        finally:
            self._outstanding -= 1

    async def _collect(self, queue: asyncio.Queue) -> list[_Pending[T]]:
        batch = [await queue.get()]
        deadline = time.monotonic() + self.max_wait
        while len(batch) < self.max_batch:
            try:
                batch.append(queue.get_nowait())
                continue
            except asyncio.QueueEmpty:
                pass
            if len(batch) >= min(self._expect, self.max_batch):
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(queue.get(), remaining))
            except TimeoutError:
                break
        return batch

    async def _run(self) -> None:
        queue = self._queue
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect(queue)
            live = [p for p in batch if not p.future.done()]  # a caller that gave up is not computed
            self._expect, self._peak = max(1, self._peak), self._outstanding  # a new window starts now
            if not live:
                continue
            t0 = time.perf_counter()
            self.stats.queued += sum(t0 - p.since for p in live)
            try:
                results = await loop.run_in_executor(self.executor, self.fn, [p.item for p in live])
                if len(results) != len(live):
                    raise RuntimeError(f"batch function returned {len(results)} results for {len(live)} items")
            except Exception as exc:  # noqa: BLE001 - handed to every caller of this batch
                for p in live:
                    if not p.future.done():
                        p.future.set_exception(exc)
            else:
                for p, r in zip(live, results):
                    if not p.future.done():
                        p.future.set_result(r)
            self.stats.batches += 1
            self.stats.items += len(live)
            self.stats.largest = max(self.stats.largest, len(live))
            self.stats.seconds += time.perf_counter() - t0

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker = None
