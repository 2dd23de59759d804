"""The micro-batcher: one call per wave of concurrent requests, each caller its own answer."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from defsentflow.serve import MicroBatcher


def test_a_wave_of_requests_is_one_call_and_answers_go_back_in_order():
    calls: list[list[int]] = []
    release = threading.Event()

    def double(xs):
        release.wait(5)  # the first call holds the worker while the rest queue up
        calls.append(list(xs))
        return [x * 2 for x in xs]

    async def run():
        b = MicroBatcher(double, max_batch=8, max_wait_ms=1)
        first = asyncio.create_task(b.submit(0))
        await asyncio.sleep(0.05)
        rest = [asyncio.create_task(b.submit(i)) for i in range(1, 20)]
        await asyncio.sleep(0.05)
        release.set()
        out = await asyncio.gather(first, *rest)
        await b.close()
        return out, b.stats

    out, stats = asyncio.run(run())
    assert out == [2 * i for i in range(20)]
    assert calls[0] == [0] and [len(c) for c in calls[1:]] == [8, 8, 3]  # at most max_batch per call
    assert sorted(x for c in calls for x in c) == list(range(20))
    assert stats.batches == 4 and stats.items == 20 and stats.largest == 8


def test_a_lone_request_does_not_wait_for_company():
    async def run():
        b = MicroBatcher(lambda xs: list(xs), max_batch=32, max_wait_ms=2000)
        t0 = time.perf_counter()
        for i in range(3):
            assert await b.submit(i) == i
        await b.close()
        return time.perf_counter() - t0

    assert asyncio.run(run()) < 1.0  # the 2 s wait applies only when more requests are expected


def test_after_a_big_batch_the_next_waits_for_as_many_and_not_longer_than_max_wait():
    sizes = []

    def record(xs):
        sizes.append(len(xs))
        return list(xs)

    async def run():
        b = MicroBatcher(record, max_batch=32, max_wait_ms=200)
        await asyncio.gather(*(b.submit(i) for i in range(4)))  # one batch of 4
        tasks = [asyncio.create_task(b.submit(10))]
        for i in range(3):  # stragglers of the next wave
            await asyncio.sleep(0.02)
            tasks.append(asyncio.create_task(b.submit(11 + i)))
        await asyncio.gather(*tasks)
        t0 = time.perf_counter()
        await b.submit(99)  # a wave that never comes: waits max_wait, then goes alone
        waited = time.perf_counter() - t0
        await b.close()
        return waited

    waited = asyncio.run(run())
    assert sizes == [4, 4, 1] and 0.15 < waited < 2.0


def test_an_error_reaches_every_caller_of_the_batch_and_the_worker_goes_on():
    def boom(xs):
        if "bad" in xs:
            raise ValueError("bad input in batch")
        return [x.upper() for x in xs]

    async def run():
        b = MicroBatcher(boom, max_batch=4, max_wait_ms=50)
        results = await asyncio.gather(b.submit("bad"), b.submit("ok"), return_exceptions=True)
        after = await b.submit("fine")
        await b.close()
        return results, after

    results, after = asyncio.run(run())
    assert all(isinstance(r, ValueError) for r in results) and after == "FINE"


def test_max_batch_must_be_positive():
    with pytest.raises(ValueError, match="max_batch must be >= 1"):
        MicroBatcher(lambda xs: xs, max_batch=0)
