"""The command's Dask cluster: started or attached once per command, checked, shared, cancelled.

:func:`compute_cluster` makes ``compute:``'s cluster the command's. It starts a ``LocalCluster``
(``local_workers``: single-threaded worker processes, ``DEFSENTFLOW_WORKER=1`` in their
environment, Dask's ``MALLOC_TRIM_THRESHOLD_`` unset) or attaches to ``compute.address``, and
refuses in one line, within ``compute.worker_timeout`` seconds, a cluster that cannot run the
command's work (:func:`attach`): no workers, no ``GPU`` resources when candidates ask for GPUs,
workers without the catalog guard or with several threads, other code, a data root, base model
or ``data_dir`` they do not see, a Prefect API they cannot reach. The flow process itself must
not carry the guard. Every flow and subflow of the command then finds the cluster through
``DEFSENTFLOW_DASK_ADDRESS`` and shares its one :class:`ClusterSession` (one client).

Cancellation: when the command ends by an exception (Ctrl-C, SIGTERM, a failure), the session
sets its Dask event (running calls stop at their next checkpoint:
:func:`defsentflow.fanout.at_checkpoint`) and cancels its queued tasks.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from defsentflow import __version__
from defsentflow.compute import (
    ADDRESS_ENV,
    GPUS_ENV,
    THREADS_ENV,
    TIMEOUT_ENV,
    ComputeSection,
    attach_problems,
    compute_to_env,
    flow_process_problem,
    route_address,
    worker_report,
)
from defsentflow.fanout import WORKER_ENV, CallSettings
from defsentflow.storage.hashing import code_version

__all__ = ["PRELOAD", "WORKER_ONLY_ENV", "ClusterAttachError", "ClusterSession", "api_host", "cancel_command",
           "check_api", "compute_cluster", "session_for", "worker_environ"]

PRELOAD = "defsentflow.tasks.preload"
"""What the command's workers import when they start (``dask worker --preload`` on external ones)."""
WORKER_ONLY_ENV = {WORKER_ENV: "1"}
OWNER_ENV = "DEFSENTFLOW_COMPUTE_OWNER"
"""The pid of the process whose outermost :func:`compute_cluster` decided the command's compute."""


class ClusterAttachError(ValueError):
    """The cluster cannot run this command's work (one line saying what to change)."""


def worker_environ() -> dict[str, Any]:
    """``distributed.nanny.pre-spawn-environ`` for our workers: Dask's defaults (one BLAS thread)
    without ``MALLOC_TRIM_THRESHOLD_`` (it cost ~60 % CPU time per candidate). The nanny also sets
    these in ITS process (for a LocalCluster: the flow's), so the worker guard
    ``DEFSENTFLOW_WORKER=1`` goes in the workers' own ``env`` instead (:data:`WORKER_ONLY_ENV`)."""
    import dask  # lazy: Dask starts only when a config asks for a cluster

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


class ClusterSession:
    """One command's connection to its cluster: the prefect-dask runner every fan-out submits
    through, the settings every call runs under, and what a cancellation must reach."""

    def __init__(self, address: str, compute: ComputeSection) -> None:
        from prefect_dask import DaskTaskRunner  # lazy: Dask starts only when a config asks for a cluster

        self.address, self.compute = address, compute
        self.cancel_name = f"defsentflow-cancel-{uuid.uuid4().hex}"
        self._futures: list[Any] = []
        self._lock = threading.Lock()
        self.runner = DaskTaskRunner(address=address, client_kwargs={"timeout": f"{compute.worker_timeout}s"})
        try:
            self.runner.__enter__()
        except OSError as exc:
            raise ClusterAttachError(f"no Dask scheduler answered at {address} within {compute.worker_timeout:g}s "
                                     f"({' '.join(str(exc).split())[:200]}); start one (`dask scheduler`) or fix "
                                     "compute.address / --dask-address") from None

    @property
    def client(self) -> Any:
        return self.runner.client

    def workers(self) -> dict[str, dict[str, Any]]:
        """The scheduler's worker info, address -> ``nthreads``, ``resources``, ``name``, ``host``..."""
        return dict(self.client.scheduler_info(n_workers=-1).get("workers", {}))

    def settings(self, gpus: float | None = None) -> CallSettings:
        """What each call submitted through this session runs under."""
        return CallSettings(threads=self.compute.threads_per_candidate,
                            gpus=self.compute.gpus_per_candidate if gpus is None else gpus, cancel=self.cancel_name)

    def track(self, futures: list[Any]) -> None:
        """Remember submitted futures (Dask's), so that :meth:`cancel` can reach the queued ones."""
        with self._lock:
            self._futures = [f for f in self._futures if not f.done()] + list(futures)

    def cancel(self, wait: float = 30.0) -> int:
        """Ask running calls to stop at their next checkpoint, drop the queued ones, and wait (up to
        ``wait`` seconds) until the running ones have stopped, so that their states still reach the
        command's Prefect API. Returns how many were still running when asked."""
        from distributed import Event  # lazy: Dask starts only when a config asks for a cluster

        with self._lock:
            pending = [f for f in self._futures if not f.done()]
            self._futures = []
        if not pending:
            return 0
        keys = {f.key for f in pending}
        running: list[Any] = []
        with contextlib.suppress(Exception):  # the scheduler may be gone already
            Event(self.cancel_name, client=self.client).set()
            running = self._executing(keys)
            self.client.cancel(pending, force=True)
            deadline = time.monotonic() + wait
            while self._executing(keys) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1.0 if running else 0)  # the stopped calls' last states are on their way to the API
        return len(running)

    def _executing(self, keys: set[Any]) -> list[Any]:
        """Which of ``keys`` a worker is executing now."""
        def executing(dask_worker: Any) -> list[Any]:
            return [ts.key for ts in dask_worker.state.executing]

        return [k for ks in self.client.run(executing).values() for k in ks if k in keys]

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the cluster may be gone already
            self.runner.__exit__(None, None, None)


_SESSIONS: dict[str, ClusterSession] = {}


def session_for(address: str) -> ClusterSession:
    """The open session of the command's cluster at ``address``."""
    session = _SESSIONS.get(address)
    if session is None:
        raise RuntimeError(f"no open cluster session for {address}: run the flow inside compute_cluster() "
                           "(every flow entry point does)")
    return session


def cancel_command(address: str | None) -> int:
    """Cancel the work of the command's cluster session at ``address`` (see :meth:`ClusterSession.cancel`)."""
    session = _SESSIONS.get(address or "")
    return session.cancel() if session is not None else 0


def _hosts(workers: Mapping[str, Any]) -> list[str]:
    from distributed.comm import get_address_host  # lazy: Dask starts only when a config asks for a cluster

    return sorted({get_address_host(a) for a in workers})


def api_host(address: str | None) -> str:
    """Where this command's temporary Prefect API must listen so that the cluster's workers reach
    it: this host's address on the route to them (127.0.0.1 without a cluster or for local workers)."""
    if not address or address not in _SESSIONS:
        return "127.0.0.1"
    return route_address(_hosts(_SESSIONS[address].workers()))


def _set_no_workers_timeout(dask_scheduler: Any, seconds: float) -> float | None:
    """On the scheduler: a task no worker can run fails after ``seconds`` (unless it has a timeout already)."""
    if dask_scheduler.no_workers_timeout is None:
        dask_scheduler.no_workers_timeout = seconds
    return dask_scheduler.no_workers_timeout


def _gpu_workers(workers: Mapping[str, Any], gpus: float) -> list[str]:
    return [a for a, w in workers.items() if float((w.get("resources") or {}).get("GPU", 0)) >= gpus]


def _raise(problems: list[str], address: str) -> None:
    if problems:
        raise ClusterAttachError(f"the Dask cluster at {address} cannot run this command: " + "; ".join(problems))


def attach(session: ClusterSession, needs: Mapping[str, str] | None = None, api_url: str | None = None) -> None:
    """Check that the cluster can run the command (see the module docstring); one-line refusals."""
    from defsentflow.tasks.worker import PerApiEvents  # lazy: imports distributed, only for a cluster

    compute, client, address = session.compute, session.client, session.address
    timeout = compute.worker_timeout
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        raise ClusterAttachError(f"no Dask worker joined the scheduler at {address} within {timeout:g}s "
                                 f"(compute.worker_timeout); start workers: {WORKER_ENV}=1 dask worker {address} "
                                 f"--nthreads 1 --preload {PRELOAD}") from None
    workers = session.workers()
    if compute.gpus_per_candidate > 0:
        deadline = time.monotonic() + timeout
        while not _gpu_workers(workers, compute.gpus_per_candidate) and time.monotonic() < deadline:
            time.sleep(0.5)
            workers = session.workers()
        if not _gpu_workers(workers, compute.gpus_per_candidate):
            offered = sorted({str(w.get("resources") or {}) for w in workers.values()})
            raise ClusterAttachError(
                f"no Dask worker at {address} offers GPU={compute.gpus_per_candidate:g} after {timeout:g}s "
                f"(compute.gpus_per_candidate: {compute.gpus_per_candidate:g}; the {len(workers)} workers offer "
                f"{', '.join(offered)}); start GPU workers with --resources GPU=1, or set gpus_per_candidate: 0")
    client.run_on_scheduler(_set_no_workers_timeout, seconds=timeout)
    client.register_plugin(PerApiEvents())
    reports = client.run(worker_report, dict(needs or {}), api_url)
    _raise(attach_problems(workers, reports, compute=compute, version=__version__, code=code_version(),
                           paths=dict(needs or {})), address)


def check_api(address: str | None, api_url: str) -> None:
    """Refuse in one line when a worker of the command's cluster cannot reach the Prefect API at ``api_url``."""
    if not address or address not in _SESSIONS:
        return
    session = _SESSIONS[address]
    reports = session.client.run(worker_report, {}, api_url)
    bad = [f"{a} ({r['api']})" for a, r in reports.items() if r.get("api") != "ok"]
    if bad:
        raise ClusterAttachError(f"{len(bad)} of {len(reports)} workers of {address} cannot reach the Prefect API at "
                                 f"{api_url}: {', '.join(bad[:3])}; set PREFECT_API_URL to a Prefect server the "
                                 "workers can reach (`prefect server start --host 0.0.0.0`)")


def _local_cluster(compute: ComputeSection) -> Any:
    import dask  # lazy: Dask starts only when a config asks for a cluster
    from distributed import LocalCluster  # lazy: Dask starts only when a config asks for a cluster

    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ(),
                          "distributed.scheduler.no-workers-timeout": f"{compute.worker_timeout}s"}):
        kwargs: dict[str, Any] = {"n_workers": compute.local_workers, "threads_per_worker": 1, "processes": True,
                                  "dashboard_address": "127.0.0.1:0", "env": dict(WORKER_ONLY_ENV), "preload": [PRELOAD]}
        if compute.gpus_per_candidate:
            kwargs["resources"] = {"GPU": 1}
        return LocalCluster(**kwargs)


@contextlib.contextmanager
def compute_cluster(compute: ComputeSection | None, needs: Mapping[str, str] | None = None) -> Iterator[str | None]:
    """Make ``compute``'s cluster the command's: yields its scheduler address (None: sequential).

    ``needs``: label -> path every worker must see (:func:`defsentflow.compute.shared_paths`).
    Inside an outer command's ``compute_cluster`` (a flow called by the CLI, a subflow), the outer
    one's choice stands. A deployment's ``DEFSENTFLOW_DASK_ADDRESS`` (job variables) overrides the
    config's address.

    Raises:
        ClusterAttachError: the flow process has ``DEFSENTFLOW_WORKER`` set, or the cluster cannot run
            the command (one line naming what to change).
    """
    problem = flow_process_problem()
    if problem:
        raise ClusterAttachError(problem)
    if os.environ.get(OWNER_ENV) == str(os.getpid()):  # nested: the outer call decided
        yield os.environ.get(ADDRESS_ENV) or None
        return
    compute = compute or ComputeSection()
    if os.environ.get(ADDRESS_ENV):  # a deployment's job variables name its cluster
        compute = compute.model_copy(update={"address": os.environ[ADDRESS_ENV], "local_workers": 0})
    saved = {k: os.environ.get(k) for k in (ADDRESS_ENV, GPUS_ENV, THREADS_ENV, TIMEOUT_ENV, OWNER_ENV)}
    cluster = session = previous = None
    address = compute.address
    try:
        if not address and compute.local_workers:
            cluster = _local_cluster(compute)
            address = cluster.scheduler_address
        if address:
            session = ClusterSession(address, compute)
            previous = _SESSIONS.get(address)  # another command of this process on the same cluster
            _SESSIONS[address] = session
            attach(session, needs, api_url=os.environ.get("PREFECT_API_URL"))
            kind = (f"LocalCluster of {compute.local_workers} single-threaded worker processes" if cluster is not None
                    else "Dask cluster")
            print(f"{kind} at {address}: {len(session.workers())} workers, {compute.threads_per_candidate} torch "
                  f"thread(s) per candidate; dashboard {session.client.dashboard_link}")
        os.environ.update(compute_to_env(compute, address))
        os.environ[OWNER_ENV] = str(os.getpid())
        yield address
    except BaseException:
        if session is not None:
            session.cancel()
        raise
    finally:
        if session is not None:
            if _SESSIONS.get(session.address) is session:
                _SESSIONS.pop(session.address)
            if previous is not None:
                _SESSIONS[session.address] = previous
            session.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if cluster is not None:
            cluster.close()
