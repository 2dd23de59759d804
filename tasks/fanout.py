"""The flows' fan-out: each call a Prefect task on prefect-dask's ``DaskTaskRunner``.

:func:`compute_cluster` starts the command's one ``LocalCluster`` (single-threaded worker
processes; ``DEFSENTFLOW_WORKER=1`` and Dask's ``MALLOC_TRIM_THRESHOLD_`` unset in their
environment) or connects to ``compute.address``, and hands the address to every flow and subflow
of the command through ``DEFSENTFLOW_DASK_ADDRESS``. :func:`fan_out_from_env` is what a flow puts
in its sequencer's ``steps``: a :class:`DaskFanOut` when an address is set, else a
:class:`TaskFanOut` (each call a Prefect task, in turn).
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from defsentflow.compute import ADDRESS_ENV, ComputeSection, compute_from_env, compute_to_env
from defsentflow.fanout import WORKER_ENV, CandidateLostError, FanOut, call_one

__all__ = ["PRELOAD", "DaskFanOut", "TaskFanOut", "close_runners", "compute_cluster", "fan_out_from_env",
           "worker_environ"]


def worker_environ() -> dict[str, Any]:
    """``distributed.nanny.pre-spawn-environ`` for our workers: Dask's defaults (one BLAS thread)
    without ``MALLOC_TRIM_THRESHOLD_`` (it cost ~60 % CPU time per candidate). The nanny also sets
    these in ITS process (for a LocalCluster: the flow's), so the worker guard
    ``DEFSENTFLOW_WORKER=1`` goes in the workers' own ``env`` instead (:data:`WORKER_ONLY_ENV`)."""
    import dask  # lazy: Dask starts only when a config asks for a cluster

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


WORKER_ONLY_ENV = {WORKER_ENV: "1"}
PRELOAD = "defsentflow.tasks.preload"
"""What the command's workers import when they start (``dask worker --preload`` on external ones)."""

_RUNNERS: dict[str, Any] = {}


def _runner(address: str) -> Any:
    """The process's started ``DaskTaskRunner`` for ``address``: one client connection for every
    fan-out of the command (steps, shards, points), closed by :func:`close_runners`."""
    runner = _RUNNERS.get(address)
    if runner is None:
        from prefect_dask import DaskTaskRunner  # lazy: Dask starts only when a config asks for a cluster

        runner = DaskTaskRunner(address=address).__enter__()
        _RUNNERS[address] = runner
    return runner


def close_runners() -> None:
    """Close the runners :func:`_runner` opened (at the end of :func:`compute_cluster`, and at exit)."""
    while _RUNNERS:
        _, runner = _RUNNERS.popitem()
        with contextlib.suppress(Exception):  # the cluster may be gone already
            runner.__exit__(None, None, None)


atexit.register(close_runners)


def _label(call: Any) -> str:
    first = call[0] if isinstance(call, (tuple, list)) and call else call
    if isinstance(first, dict) and first.get("label"):
        return str(first["label"])
    return repr(call)[:80]


class DaskFanOut:
    """``fan_out(fn, calls)`` that submits every call as a Prefect task (``retries=1``, tag ``gpu``
    when candidates ask for GPUs) to the Dask cluster at ``address``; results in submission order.

    A call lost with its worker too often (Dask's ``KilledWorker``) becomes a one-line
    :class:`CandidateLostError` naming it.
    """

    def __init__(self, address: str, *, gpus_per_candidate: float = 0, name: str | None = None) -> None:
        self.address, self.gpus, self.name = address, gpus_per_candidate, name
        self._shards: int | None = None

    @property
    def shards(self) -> int:
        """How many pieces to cut divisible work into (entry-matrix shards): the cluster's workers."""
        if self._shards is None:
            info = _runner(self.address).client.scheduler_info()
            self._shards = max(1, len(info.get("workers", {})))
        return self._shards

    def __call__(self, fn: Callable[..., Any], calls: Sequence[Any]) -> list[Any]:
        return self.submit(fn, calls)()

    def submit(self, fn: Callable[..., Any], calls: Sequence[Any]) -> Callable[[], list[Any]]:
        """Submit every call now; the returned function waits for the results (submission order)."""
        import dask  # lazy: Dask starts only when a config asks for a cluster
        from prefect import task  # lazy: Prefect loads only where a flow or task runs
        from prefect.cache_policies import NO_CACHE  # lazy: Prefect loads only where a flow or task runs

        calls = list(calls)
        if not calls:
            return lambda: []
        tags = ["gpu"] if self.gpus > 0 else []
        name = self.name or fn.__name__.replace("_", "-")
        wrapped = task(name=name, retries=1, tags=tags, cache_policy=NO_CACHE, persist_result=False)(fn)
        sig = inspect.signature(fn)
        params = [dict(c) if isinstance(c, dict) else dict(sig.bind(*c).arguments) for c in calls]
        annotate = dask.annotate(resources={"GPU": self.gpus}) if self.gpus > 0 else contextlib.nullcontext()
        runner = _runner(self.address)
        with annotate:
            futures = [runner.submit(wrapped, parameters=p) for p in params]

        def results() -> list[Any]:
            out = []
            for call, fut in zip(calls, futures):
                try:
                    out.append(fut.result())
                except Exception as exc:
                    if "KilledWorker" in f"{type(exc).__name__} {str(exc)[:300]}":  # as Dask or Prefect says it
                        raise CandidateLostError(f"{_label(call)}: lost with its Dask worker 3 times (KilledWorker); "
                                                 "see the worker logs (out of memory?)") from None
                    raise
            return out

        return results


class TaskFanOut:
    """``fan_out(fn, calls)`` without a cluster: each call a Prefect task run in turn, in this thread
    (visible in the UI with its state and logs, as the Dask tasks are)."""

    def __init__(self, *, name: str | None = None, tags: Sequence[str] = ()) -> None:
        self.name, self.tags = name, list(tags)

    def __call__(self, fn: Callable[..., Any], calls: Sequence[Any]) -> list[Any]:
        from prefect import task  # lazy: Prefect loads only where a flow or task runs
        from prefect.cache_policies import NO_CACHE  # lazy: Prefect loads only where a flow or task runs

        wrapped = task(name=self.name or fn.__name__.replace("_", "-"), tags=self.tags, cache_policy=NO_CACHE,
                       persist_result=False)(fn)
        return [call_one(wrapped, c) for c in calls]


def fan_out_from_env(name: str | None = None) -> FanOut:
    """The fan-out a flow hands its sequencer: the command's Dask cluster, or one task after another."""
    compute = compute_from_env()
    if not compute.address:
        return TaskFanOut(name=name, tags=["gpu"] if compute.gpus_per_candidate > 0 else [])
    return DaskFanOut(compute.address, gpus_per_candidate=compute.gpus_per_candidate, name=name)


@contextlib.contextmanager
def compute_cluster(compute: ComputeSection | None) -> Iterator[str | None]:
    """Make ``compute``'s cluster the command's: yields its scheduler address (None: sequential).

    An address already in the environment (an outer command's cluster) is reused as is.
    """
    compute = compute or ComputeSection()
    if os.environ.get(ADDRESS_ENV) or not compute.distributed:
        yield os.environ.get(ADDRESS_ENV)
        return
    saved = {k: os.environ.get(k) for k in compute_to_env(compute, "x")}
    cluster = None
    try:
        if compute.address:
            from distributed import Client  # lazy: Dask starts only when a config asks for a cluster

            address = compute.address
            with Client(address, timeout=30) as client:
                print(f"Dask cluster at {address}: {len(client.scheduler_info()['workers'])} workers; "
                      f"dashboard {client.dashboard_link}")
        else:
            import dask  # lazy: Dask starts only when a config asks for a cluster
            from distributed import LocalCluster  # lazy: Dask starts only when a config asks for a cluster

            with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
                kwargs: dict[str, Any] = {"n_workers": compute.local_workers, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": ":0",
                                          "env": dict(WORKER_ONLY_ENV), "preload": [PRELOAD]}
                if compute.gpus_per_candidate:
                    kwargs["resources"] = {"GPU": 1}
                cluster = LocalCluster(**kwargs)
            address = cluster.scheduler_address
            print(f"Dask LocalCluster: {compute.local_workers} single-threaded worker processes at {address}; "
                  f"dashboard {cluster.dashboard_link}")
        os.environ.update(compute_to_env(compute, address))
        yield address
    finally:
        close_runners()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if cluster is not None:
            cluster.close()
