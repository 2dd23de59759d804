"""Fan-out: independent calls planned by a library sequencer, run by an injected executor.

The sequencers (PST's candidates, a sweep's points, the claims' arms, entry-matrix shards) plan a
list of calls and hand them to a ``fan_out`` with this signature::

    fan_out(fn, calls: list[tuple | dict]) -> list[results, in submission order]

A call that is a tuple is ``fn(*call)``, a dict is ``fn(**call)``. The default, :func:`sequential`,
is a plain loop in this process; under a flow, ``tasks/fanout.py`` passes one that submits each
call as a Prefect task to prefect-dask's ``DaskTaskRunner`` (worker processes, never threads, for
training). A Ray or any other executor is the same one function. Whatever the executor, the
results are the same: each call is a pure function of its arguments (its own seeded generators,
output directory, artifact lock and device; no catalog access on a worker).

This module also holds what a call does on its worker: the torch thread count
(:func:`worker_threads`) and the fault-test hook (:func:`kill_hook_steps`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["FanOut", "KILL_AFTER_STEPS_ENV", "KILL_MARKER_ENV", "WORKER_ENV", "CandidateLostError", "call_one",
           "kill_hook_steps", "kill_this_worker", "on_worker", "runs_beside", "sequential", "submit", "worker_device",
           "worker_threads"]

T = TypeVar("T")
Call = "tuple[Any, ...] | dict[str, Any]"
FanOut = Callable[[Callable[..., Any], Sequence[Any]], list[Any]]

WORKER_ENV = "DEFSENTFLOW_WORKER"
"""Set to 1 on every Dask worker this project starts (and on external ones): the catalog refuses to open."""
KILL_AFTER_STEPS_ENV = "DEFSENTFLOW_TEST_KILL_AFTER_STEPS"
"""Fault tests: a candidate trains this many optimizer steps, checkpoints, then SIGKILLs its worker."""
KILL_MARKER_ENV = "DEFSENTFLOW_TEST_KILL_MARKER"
"""Fault tests: the file whose creation marks that the kill happened (so the retry runs through)."""


class CandidateLostError(RuntimeError):
    """A fanned-out call whose worker died too often (Dask's ``KilledWorker``), named by its label."""


def call_one(fn: Callable[..., T], call: Any) -> T:
    """``fn(**call)`` for a dict, ``fn(*call)`` for a tuple (or list)."""
    if isinstance(call, dict):
        return fn(**call)
    if isinstance(call, (tuple, list)):
        return fn(*call)
    raise TypeError(f"a fan-out call is a tuple or a dict, got {type(call).__name__}")


def sequential(fn: Callable[..., T], calls: Sequence[Any]) -> list[T]:
    """The default executor: every call in turn, in this process."""
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
    """Run the block with ``threads`` torch intra-op threads (None: leave the process's setting)."""
    if not threads:
        yield
        return
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def worker_device(device: str | None) -> str | None:
    """``auto`` on a Dask worker that sees several GPUs: the worker's own one (``cuda:<worker index mod
    GPUs>``; workers pinned with ``CUDA_VISIBLE_DEVICES``, as dask-cuda starts them, see one and keep
    ``auto``). Anything else is returned unchanged."""
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
