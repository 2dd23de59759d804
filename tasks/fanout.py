"""The flows' fan-out: every call a Prefect task, on the command's Dask cluster when it has one.

:func:`fan_out_from_env` is what a flow hands its sequencer for independent calls (PST candidates,
entry-matrix shards, harvest batches): a :class:`DaskFanOut` on the command's cluster
(:mod:`defsentflow.tasks.cluster`), else a :class:`TaskFanOut` (each call a Prefect task, in turn,
in this process). Both run every call under the same :class:`~defsentflow.fanout.CallSettings`
(threads per candidate, GPUs asked for), so the results are the same either way.
:func:`points_fan_out` runs sweep points and claims arms: side by side on a cluster
(:class:`PointFanOut`: each point sequences its pipeline in a thread of this process, the one
catalog writer, while its candidates run on the workers), one after another without one.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import contextvars
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from defsentflow.compute import compute_from_env
from defsentflow.fanout import (
    CallSettings,
    CandidateLostError,
    FanOut,
    call_one,
    in_turn,
    with_settings,
)
from defsentflow.tasks.cluster import ClusterSession, session_for
from defsentflow.tasks.retries import TRAIN_RETRIES
from defsentflow.tasks.step import step_task

__all__ = ["DaskFanOut", "PointFanOut", "TaskFanOut", "fan_out_from_env", "points_fan_out"]

_UNSET: Any = object()
CALL_RETRIES = {"retries": 1, "retry_condition_fn": TRAIN_RETRIES["retry_condition_fn"]}
"""A lost call runs once more (a killed worker's call is first rescheduled by Dask itself)."""


def _label(call: Any) -> str:
    first = call[0] if isinstance(call, (tuple, list)) and call else call
    if isinstance(first, dict) and first.get("label"):
        return str(first["label"])
    label = getattr(first, "label", None)
    return str(label) if isinstance(label, str) else repr(call)[:80]


def _one_line(call: Any, exc: BaseException, gpus: float) -> BaseException | None:
    """The fan-out's own words for a call the cluster could not run (None: the call's own error)."""
    text = f"{type(exc).__name__} {str(exc)[:300]}"
    if "KilledWorker" in text:  # as Dask or Prefect says it
        return CandidateLostError(f"{_label(call)}: lost with its Dask worker 3 times (KilledWorker); see the worker "
                                  "logs (out of memory?)")
    if "NoValidWorkerError" in text or "NoWorkerError" in text:
        asked = f" (it asks for GPU={gpus:g})" if gpus > 0 else ""
        return CandidateLostError(f"{_label(call)}: no Dask worker could run it within compute.worker_timeout{asked}; "
                                  "the workers left or none offers the resources")
    return None


class DaskFanOut:
    """``fan_out(fn, calls)`` that submits every call as a Prefect task (retried once; tag ``gpu``
    and Dask resource ``GPU`` when candidates ask for GPUs) to the command's cluster at ``address``;
    results in submission order. Each call runs under the session's settings (``compute:``'s threads
    and GPUs, its cancellation event); ``threads`` (None: the worker's own) and ``gpus_per_candidate``
    override them. A call the cluster cannot run becomes a one-line
    :class:`~defsentflow.fanout.CandidateLostError` naming it."""

    def __init__(self, address: str, *, gpus_per_candidate: float | None = None, name: str | None = None,
                 threads: int | None = _UNSET, tags: Sequence[str] = (),
                 retries: Mapping[str, Any] | None = None) -> None:
        self.address, self.name, self.tags = address, name, list(tags)
        self.retries = dict(CALL_RETRIES if retries is None else retries)
        self._gpus, self._threads = gpus_per_candidate, threads
        self._shards: int | None = None

    @property
    def session(self) -> ClusterSession:
        return session_for(self.address)

    @property
    def settings(self) -> CallSettings:
        s = self.session.settings(self._gpus)
        return s if self._threads is _UNSET else CallSettings(threads=self._threads, gpus=s.gpus, cancel=s.cancel)

    @property
    def shards(self) -> int:
        """How many pieces to cut divisible work into (entry-matrix shards): the cluster's workers."""
        if self._shards is None:
            self._shards = max(1, len(self.session.workers()))
        return self._shards

    def __call__(self, fn: Callable[..., Any], calls: Sequence[Any]) -> list[Any]:
        return self.submit(fn, calls)()

    def submit(self, fn: Callable[..., Any], calls: Sequence[Any]) -> Callable[[], list[Any]]:
        """Submit every call now; the returned function waits for the results (submission order)."""
        import dask  # lazy: Dask starts only when a config asks for a cluster

        calls = list(calls)
        if not calls:
            return lambda: []
        settings, session = self.settings, self.session
        tags = [*self.tags, *(["gpu"] if settings.gpus > 0 else [])]
        wrapped = step_task(with_settings(fn, settings), self.name or fn.__name__.replace("_", "-"),
                            retries=self.retries, tags=tags)
        sig = inspect.signature(fn)
        params = [dict(c) if isinstance(c, dict) else dict(sig.bind(*c).arguments) for c in calls]
        annotate = dask.annotate(resources={"GPU": settings.gpus}) if settings.gpus > 0 else contextlib.nullcontext()
        with annotate:
            futures = [session.runner.submit(wrapped, parameters=p) for p in params]
        session.track([f.wrapped_future for f in futures])

        def results() -> list[Any]:
            out = []
            for call, fut in zip(calls, futures):
                try:
                    out.append(fut.result())
                except Exception as exc:
                    mine = _one_line(call, exc, settings.gpus)
                    if mine is not None:
                        raise mine from None
                    raise
            return out

        return results


class TaskFanOut:
    """``fan_out(fn, calls)`` without a cluster: each call a Prefect task run in turn, in this thread
    (visible in the UI with its state and logs, as the Dask tasks are), under ``settings``."""

    def __init__(self, *, name: str | None = None, tags: Sequence[str] = (), settings: CallSettings | None = None,
                 retries: Mapping[str, Any] | None = None) -> None:
        self.name, self.tags, self.settings = name, list(tags), settings or CallSettings()
        self.retries = dict(retries or {})

    def __call__(self, fn: Callable[..., Any], calls: Sequence[Any]) -> list[Any]:
        tags = [*self.tags, *(["gpu"] if self.settings.gpus > 0 else [])]
        wrapped = step_task(with_settings(fn, self.settings), self.name or fn.__name__.replace("_", "-"),
                            retries=self.retries, tags=tags)
        return [call_one(wrapped, c) for c in calls]


def fan_out_from_env(name: str | None = None, *, threads: int | None = _UNSET, gpus: float | None = None,
                     retries: Mapping[str, Any] | None = None) -> FanOut:
    """The fan-out a flow hands its sequencer: the command's Dask cluster, or one task after another.
    ``threads``/``gpus`` override ``compute:``'s (harvest batches: the harvest's own ``threads``, None
    leaving the process's, and no GPU); ``retries``: the tasks' (default: once, as a candidate)."""
    compute = compute_from_env()
    threads = compute.threads_per_candidate if threads is _UNSET else threads
    if compute.address:
        return DaskFanOut(compute.address, gpus_per_candidate=gpus, name=name, threads=threads, retries=retries)
    settings = CallSettings(threads=threads, gpus=compute.gpus_per_candidate if gpus is None else gpus)
    return TaskFanOut(name=name, settings=settings, retries=CALL_RETRIES if retries is None else retries)


class PointFanOut:
    """Sweep points (claims arms) side by side: each call in a thread of this process, which stays
    the one catalog writer; what a point trains goes to the cluster's workers. On an interrupt the
    session is cancelled first, so the threads waiting on their candidates end at once."""

    def __init__(self, session: ClusterSession, width: int) -> None:
        self.session, self.width = session, max(1, width)

    def __call__(self, fn: Callable[..., Any], calls: Sequence[Any]) -> list[Any]:
        calls = list(calls)
        if len(calls) < 2:
            return in_turn(fn, calls)
        pool = cf.ThreadPoolExecutor(max_workers=min(self.width, len(calls)), thread_name_prefix="point")
        try:
            futures = [pool.submit(contextvars.copy_context().run, call_one, fn, c) for c in calls]
            return [f.result() for f in futures]
        except BaseException:
            self.session.cancel()
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def points_fan_out() -> FanOut:
    """How a sweep runs its points (and claims their arms): side by side on the command's cluster
    (as many at once as it has workers), else one after another."""
    compute = compute_from_env()
    if not compute.address:
        return in_turn
    session = session_for(compute.address)
    return PointFanOut(session, len(session.workers()))
