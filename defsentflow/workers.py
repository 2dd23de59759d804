"""Worker processes that never outlive the command that started them.

A ``kill -9`` of a command cannot run any clean-up, so each pool worker watches for itself: a
daemon thread started by the pool's initializer exits the worker as soon as the process that
created the pool is gone. With the workers gone, the multiprocessing resource tracker and
forkserver see their pipes close and exit too. The owner is watched by pid and start time, not
as the parent: a forkserver's workers are children of the forkserver, which stays up as long
as they do. (``prctl(PR_SET_PDEATHSIG)`` is not used: it fires when the *thread* that started
the worker ends, which under Prefect's thread pools can be long before the process does.)
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import threading
import time

__all__ = ["die_with_parent", "owner_initargs", "process_identity", "process_pool"]

_POLL_SECONDS = 0.25


def process_identity(pid: int) -> str | None:
    """A token for process ``pid`` that changes if the pid is reused; None if it is gone (or a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    try:
        # /proc/<pid>/stat: "pid (comm) state ... starttime" — comm may hold spaces, so split after ')'.
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return "alive"  # no /proc (not Linux): kill(pid, 0) is all there is
    return None if fields[0] in ("Z", "X") else fields[19]


def _watch(owner: int, identity: str | None) -> None:
    while process_identity(owner) == identity:
        time.sleep(_POLL_SECONDS)
    os._exit(1)  # no clean-up to run: the results have nowhere to go


def die_with_parent(owner: int | None = None, identity: str | None = None) -> None:
    """Pool initializer: end this worker when process ``owner`` (default: the parent) ends."""
    owner = owner or os.getppid()
    identity = identity or process_identity(owner)
    if identity is None:
        os._exit(1)
    threading.Thread(target=_watch, args=(owner, identity), daemon=True, name="die-with-parent").start()


def owner_initargs() -> tuple[int, str | None]:
    """``initargs`` for :func:`die_with_parent` naming this process as the pool's owner."""
    return os.getpid(), process_identity(os.getpid())


def process_pool(workers: int, method: str = "spawn") -> cf.ProcessPoolExecutor:
    """A process pool whose workers die with this process (``method``: spawn or forkserver,
    never fork, which would copy the caller's threads mid-lock)."""
    ctx = multiprocessing.get_context(method)
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=die_with_parent,
                                  initargs=owner_initargs())
