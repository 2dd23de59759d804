"""Fan-out: independent calls planned by a library sequencer, run by an injected executor.

The sequencers (PST's candidates, a sweep's points, the claims' arms, harvest batches, entry-matrix
shards) plan a list of calls and hand them to a ``fan_out`` with this signature::

    fan_out(fn, calls: list[tuple | dict]) -> list[results, in submission order]

A call that is a tuple is ``fn(*call)``, a dict is ``fn(**call)``. The default, :data:`sequential`,
is a plain loop in this process; under a flow, ``tasks/fanout.py`` passes one that submits each
call as a Prefect task to prefect-dask's ``DaskTaskRunner`` (worker processes, never threads, for
training). A Ray or any other executor is the same one function. Whatever the executor, the
results are the same: each call is a pure function of its arguments (its own seeded generators,
output directory, artifact lock and device; no catalog access on a worker), and every executor runs
each call under the same :class:`CallSettings` (:func:`run_call`): the same torch and BLAS thread
count (:data:`DEFAULT_THREADS` unless ``compute.threads_per_candidate`` says otherwise), so weights
are bit for bit the same in this process, on a ``LocalCluster`` and on other hosts.

This module also holds what a call does on its worker: the thread count (:func:`worker_threads`),
the device (:func:`worker_device`, which refuses a CPU for a call that asked for a GPU), the stop
request a cancelled command leaves for its running calls (:func:`at_checkpoint`, called by the
training loop at each checkpoint), and the fault-test hooks.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["BARRIER_ENV", "DEFAULT_THREADS", "FanOut", "HOLD_AFTER_STEPS_ENV", "KILL_AFTER_STEPS_ENV", "KILL_MARKER_ENV", "WORKER_ENV",
           "CallSettings", "CandidateLostError", "CandidateStoppedError", "GpuMissingError", "Sequential", "at_checkpoint",
           "call_one", "current_settings", "in_turn", "kill_hook_steps", "kill_this_worker", "on_worker", "run_call", "runs_beside",
           "sequential", "submit", "with_settings", "worker_device", "worker_threads"]

T = TypeVar("T")
FanOut = Callable[[Callable[..., Any], Sequence[Any]], list[Any]]

DEFAULT_THREADS = 1
"""Torch (and BLAS/OpenMP) threads per fanned-out call when ``compute.threads_per_candidate`` is not
set: what a single-threaded Dask worker runs, so the sequential path trains the same weights."""
WORKER_ENV = "DEFSENTFLOW_WORKER"
"""Set to 1 on every Dask worker (ours and external ones), never in the flow process: the catalog refuses to open."""
KILL_AFTER_STEPS_ENV = "DEFSENTFLOW_TEST_KILL_AFTER_STEPS"
"""Fault tests: a candidate trains this many optimizer steps, checkpoints, then SIGKILLs its worker."""
KILL_MARKER_ENV = "DEFSENTFLOW_TEST_KILL_MARKER"
"""Fault tests: the file whose creation marks that the kill (or hold) happened (so the retry runs through)."""
HOLD_AFTER_STEPS_ENV = "DEFSENTFLOW_TEST_HOLD_AFTER_STEPS"
"""Cancellation tests: at the first checkpoint at or past this step, mark it and wait (up to 120 s) for a stop request."""
BARRIER_ENV = "DEFSENTFLOW_TEST_BARRIER"
"""Concurrency tests, ``<folder>:<n>``: each call's first checkpoint writes a file there and waits (up to
60 s) until ``n`` calls have written theirs; the file then says whether they all met there."""


class CandidateLostError(RuntimeError):
    """A fanned-out call whose worker died too often (Dask's ``KilledWorker``), named by its label."""


class CandidateStoppedError(RuntimeError):
    """A running call stopped at a checkpoint because its command was cancelled (resume picks it up)."""


class GpuMissingError(RuntimeError):
    """A call that asked for a GPU (``gpus_per_candidate > 0``) found only a CPU on its worker."""


@dataclass(frozen=True)
class CallSettings:
    """What every fanned-out call runs under, whatever the executor: ``threads`` torch/BLAS threads
    (None: the process's, for work whose numbers do not depend on them), ``gpus`` the GPUs it asked
    for (0: any device), ``cancel`` the name of the Dask event its command sets when it is cancelled
    (None: nothing to watch; in-process calls stop by the interrupt itself)."""

    threads: int | None = DEFAULT_THREADS
    gpus: float = 0
    cancel: str | None = None


_LOCAL = threading.local()


def current_settings() -> CallSettings:
    """The settings of the call running in this thread (the defaults outside any call)."""
    return getattr(_LOCAL, "settings", None) or CallSettings()


def call_one(fn: Callable[..., T], call: Any) -> T:
    """``fn(**call)`` for a dict, ``fn(*call)`` for a tuple (or list)."""
    if isinstance(call, dict):
        return fn(**call)
    if isinstance(call, (tuple, list)):
        return fn(*call)
    raise TypeError(f"a fan-out call is a tuple or a dict, got {type(call).__name__}")


@contextlib.contextmanager
def _applied(settings: CallSettings) -> Iterator[None]:
    before = getattr(_LOCAL, "settings", None)
    _LOCAL.settings = settings
    try:
        with worker_threads(settings.threads) if settings.threads else contextlib.nullcontext():
            yield
    finally:
        _LOCAL.settings = before


def run_call(fn: Callable[..., T], call: Any, settings: CallSettings | None = None) -> T:
    """``call_one(fn, call)`` under ``settings`` (threads, GPU request, stop request)."""
    with _applied(settings or CallSettings()):
        return call_one(fn, call)


def with_settings(fn: Callable[..., T], settings: CallSettings) -> Callable[..., T]:
    """``fn`` (same name and signature, so a Prefect task binds its parameters) run under ``settings``."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> T:
        with _applied(settings):
            return fn(*args, **kwargs)

    return call


class Sequential:
    """The in-process executor: every call in turn, each under ``CallSettings(threads)``."""

    def __init__(self, threads: int | None = None) -> None:
        self.settings = CallSettings(threads=threads or DEFAULT_THREADS)

    def __call__(self, fn: Callable[..., T], calls: Sequence[Any]) -> list[T]:
        return [run_call(fn, c, self.settings) for c in calls]


sequential: FanOut = Sequential()
"""The default executor: every call in turn, in this process, at :data:`DEFAULT_THREADS` threads."""


def in_turn(fn: Callable[..., T], calls: Sequence[Any]) -> list[T]:
    """Every call in turn, in this process, with nothing set around it (sweep points and claims arms:
    whole pipeline runs, whose own stages decide their threads)."""
    return [call_one(fn, c) for c in calls]


def submit(fan_out: FanOut, fn: Callable[..., T], calls: Sequence[Any]) -> Callable[[], list[T]]:
    """Start ``calls`` now where the executor can (one with a ``submit`` method: a Dask cluster) and
    return a function that waits for their results, in submission order. A plain executor runs them
    when the results are asked for. Either way the results are the same (each call is pure)."""
    start = getattr(fan_out, "submit", None)
    if start is not None:
        return start(fn, calls)
    return lambda: fan_out(fn, calls)


def runs_beside(fan_out: FanOut) -> bool:
    """Whether ``fan_out`` can run calls while this process goes on (it has ``submit``)."""
    return callable(getattr(fan_out, "submit", None))


def on_worker() -> bool:
    """Whether this process is a Dask worker of ours (``DEFSENTFLOW_WORKER=1``)."""
    return os.environ.get(WORKER_ENV, "") not in ("", "0")


@contextlib.contextmanager
def worker_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` torch intra-op threads and as many BLAS/OpenMP threads
    (None: :data:`DEFAULT_THREADS`); the process's settings come back afterwards."""
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it
    from threadpoolctl import threadpool_limits  # lazy: only fanned-out calls set thread limits

    threads = int(threads or DEFAULT_THREADS)
    before = torch.get_num_threads()
    with threadpool_limits(limits=threads):
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def worker_device(device: str | None) -> str | None:
    """The device a call runs on. ``auto`` on a Dask worker that sees several GPUs: the worker's own
    one (``cuda:<worker index mod GPUs>``; workers pinned with ``CUDA_VISIBLE_DEVICES``, as dask-cuda
    starts them, see one and keep ``auto``). Anything else is returned unchanged.

    Raises:
        GpuMissingError: the call asked for a GPU (``gpus_per_candidate > 0``) and would run on the CPU.
    """
    if current_settings().gpus > 0:
        _require_gpu(device)
    if device not in (None, "auto") or not on_worker() or os.environ.get("CUDA_VISIBLE_DEVICES"):
        return device
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        return device
    try:
        from distributed import get_worker  # lazy: Dask starts only when a config asks for a cluster

        name = get_worker().name
    except (ImportError, ValueError):
        return device
    return f"cuda:{int(name) % torch.cuda.device_count()}" if str(name).isdigit() else device


def _require_gpu(device: str | None) -> None:
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

    from defsentflow.encoders.loading import pick_device  # lazy: loads torch

    resolved = pick_device(device)
    if resolved.type == "cuda" and torch.cuda.is_available():
        return
    where = f"worker {_worker_name()}" if on_worker() else "this process"
    raise GpuMissingError(f"asked for a GPU (compute.gpus_per_candidate: {current_settings().gpus:g}) but would run "
                          f"on {resolved} on {where} (device: {device}; torch sees "
                          f"{torch.cuda.device_count()} CUDA devices); start GPU workers with a CUDA build of torch, "
                          "or set gpus_per_candidate: 0")


def _worker_name() -> str:
    try:
        from distributed import get_worker  # lazy: Dask starts only when a config asks for a cluster

        w = get_worker()
        return f"{w.name} ({w.address})"
    except (ImportError, ValueError):
        return str(os.getpid())


# -- stop requests and test hooks, at the training loop's checkpoints ------------------------------------
_STOP_CHECK_SECONDS = 0.5  # at most one scheduler round trip per this interval


def _stop_requested() -> bool:
    """Whether this call's command asked its running calls to stop (its Dask event is set)."""
    name = current_settings().cancel
    if not name or not on_worker():
        return False
    now = time.monotonic()
    cached = getattr(_LOCAL, "stop_checked", None)
    if cached is not None and cached[0] == name and now - cached[1] < _STOP_CHECK_SECONDS:
        return cached[2]
    try:
        from distributed import Event  # lazy: Dask starts only when a config asks for a cluster

        stop = bool(Event(name).is_set())
    except Exception:  # noqa: BLE001 - no scheduler to ask (it is gone): keep training, as without a request
        stop = False
    _LOCAL.stop_checked = (name, now, stop)
    return stop


def at_checkpoint(step: int) -> None:
    """Called by the training loop right after it wrote a checkpoint at ``step``.

    Raises:
        CandidateStoppedError: the command of this call was cancelled: the checkpoint just written is
            where the next identical command resumes.
    """
    if os.environ.get(BARRIER_ENV):
        _barrier(os.environ[BARRIER_ENV])
    hold = os.environ.get(HOLD_AFTER_STEPS_ENV)
    marker = os.environ.get(KILL_MARKER_ENV)
    if hold and marker and step >= int(hold) and not Path(marker).exists():  # cancellation test: wait here
        Path(marker).parent.mkdir(parents=True, exist_ok=True)
        Path(marker).write_text(f"{os.getpid()} {step}")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _stop_requested():
            time.sleep(0.1)
    if _stop_requested():
        raise CandidateStoppedError(f"stopped at step {step}: the command was cancelled (its checkpoint is kept; "
                                    "the next identical command resumes from it)")


def _barrier(spec: str) -> None:
    folder, n = spec.rsplit(":", 1)
    mine = Path(folder, f"call-{os.getpid()}-{threading.get_ident()}")
    if mine.exists():
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    mine.write_text("waiting")
    deadline = time.monotonic() + 60
    while len(list(Path(folder).glob("call-*"))) < int(n) and time.monotonic() < deadline:
        time.sleep(0.05)
    mine.write_text("met" if len(list(Path(folder).glob("call-*"))) >= int(n) else "alone")


def kill_hook_steps() -> int | None:
    """The fault-test hook: the step count to kill after, or None (no hook, or it already fired)."""
    n = os.environ.get(KILL_AFTER_STEPS_ENV)
    marker = os.environ.get(KILL_MARKER_ENV)
    if not n or not marker or Path(marker).exists():
        return None
    return int(n)


def kill_this_worker() -> None:
    """Mark that the hook fired, then SIGKILL this process (as an out-of-memory kill or a lost node would)."""
    marker = Path(os.environ[KILL_MARKER_ENV])
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGKILL)
