"""Another host for the tests and the bench: Dask workers in a network namespace of their own.

A veth pair joins the namespace to this host; the pair's two addresses are a private /30 used on
these two interfaces only. The scheduler runs on this host, listening on the host end; the workers
run in the namespace (``ip netns exec``), started as docs/distributed.md says (the catalog guard,
one thread, the preload, the malloc setting through ``DASK_CONFIG``), and share the filesystem.
For Prefect and Dask this is another host: loopback is not shared, and nothing of this host but
the veth address is reachable from the workers.

Names carry this process's id (``dsfns-<pid>``, ``dsfh<pid>``/``dsfw<pid>``); namespaces left by a
process that is gone are removed first. Everything is removed on close, also on errors.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from defsentflow.storage.swap import pid_alive

__all__ = ["NetnsCluster", "netns_cluster", "netns_unavailable"]

PREFIX = "dsfns-"
_BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]  # on the workers' path too: the tests' own functions unpickle there


def _recipes():
    """deployments/dask_clusters.py (a script, not a package module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("dask_clusters", REPO / "deployments" / "dask_clusters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _die_with_parent() -> None:  # in the child, between fork and exec: SIGKILL when the test process dies
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    os.setpgrp()


def _delete_namespace(name: str) -> None:
    pids = _ip("netns", "pids", name, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    _ip("netns", "del", name, check=False)  # its end of the veth pair goes with it, and so the other end


def reap_stale() -> list[str]:
    """Remove namespaces of ours whose creating process is gone (a killed test run)."""
    gone = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(PREFIX) and name[len(PREFIX):].isdigit() and not pid_alive(int(name[len(PREFIX):])):
            _delete_namespace(name)
            gone.append(name)
    return gone


def netns_unavailable() -> str | None:
    """Why no namespace can be made here (None: it can)."""
    if sys.platform != "linux":
        return "network namespaces are Linux only"
    probe = f"{PREFIX}probe{os.getpid()}"
    try:
        res = _ip("netns", "add", probe, check=False)
    except FileNotFoundError:
        return "the ip command (iproute2) is not installed"
    if res.returncode != 0:
        return f"`ip netns add` is not permitted here: {' '.join(res.stderr.split())[:160]}"
    _ip("netns", "del", probe, check=False)
    return None


def _free_block() -> tuple[str, str]:
    """A /30 of 10.237.0.0/16 that no interface of this host uses: (host end, namespace end)."""
    used = _ip("-o", "-4", "addr", "show", check=False).stdout
    start = os.getpid() % 16_384
    for k in range(16_384):
        b = (start + k) % 16_384
        host, ns = f"10.237.{b >> 6}.{(b & 63) * 4 + 1}", f"10.237.{b >> 6}.{(b & 63) * 4 + 2}"
        if f" {host}/" not in used and f" {ns}/" not in used:
            return host, ns
    raise RuntimeError("no free /30 in 10.237.0.0/16")


@dataclass
class NetnsCluster:
    """A scheduler on this host and workers in the namespace ``ns`` (see the module docstring)."""

    ns: str
    host_ip: str
    ns_ip: str
    logs: Path
    address: str = ""
    scheduler: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)

    def start_scheduler(self) -> str:
        sched_file = self.logs / "scheduler.json"
        self.scheduler = subprocess.Popen(
            [str(_BIN / "dask"), "scheduler", "--host", self.host_ip, "--port", "0", "--no-dashboard",
             "--scheduler-file", str(sched_file)],
            env={**os.environ, "PYTHONPATH": str(REPO)},  # the scheduler unpickles task specs too
            stdout=subprocess.DEVNULL, stderr=open(self.logs / "scheduler.log", "w"), preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 120
        while not sched_file.is_file() or "address" not in sched_file.read_text():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the scheduler did not start: {(self.logs / 'scheduler.log').read_text()[-2000:]}")
            time.sleep(0.2)
        self.address = json.loads(sched_file.read_text())["address"]
        return self.address

    def worker_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The workers' environment, as docs/distributed.md sets up a worker host: its Dask config
        (``DASK_CONFIG``, written by deployments/dask_clusters.py) unsets the malloc setting and sets
        the catalog guard in the worker processes."""
        config = _recipes().worker_dask_config(self.logs / "dask-worker.yaml")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PREFECT_API", "PYTEST", "DEFSENTFLOW_DASK", "DEFSENTFLOW_WORKER", "DASK_"))}
        env.update({"DASK_CONFIG": str(config), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                    "PYTHONPATH": str(REPO), **(extra or {})})
        return env

    def start_worker(self, name: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """One ``dask worker`` (with its nanny) in the namespace; its log is ``<logs>/<name>.log``."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, str(_BIN / "dask"), "worker", self.address, "--name", name,
             "--host", self.ns_ip, "--nthreads", "1", "--no-dashboard", "--preload", "defsentflow.tasks.preload",
             "--death-timeout", "60"],
            env=env or self.worker_env(), stdout=subprocess.DEVNULL, stderr=open(self.logs / f"{name}.log", "w"),
            preexec_fn=_die_with_parent)
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, n: int, timeout: float = 240) -> None:
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(n, timeout=timeout)

    def close(self) -> None:
        for proc in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        _delete_namespace(self.ns)


@contextlib.contextmanager
def netns_cluster(logs: Path, workers: int = 2) -> Iterator[NetnsCluster]:
    """A namespace with ``workers`` Dask workers joined to a scheduler on this host; removed on exit."""
    reap_stale()
    ns, host_if, ns_if = f"{PREFIX}{os.getpid()}", f"dsfh{os.getpid()}", f"dsfw{os.getpid()}"
    _delete_namespace(ns)  # a namespace left by an earlier cluster of this process
    host_ip, ns_ip = _free_block()
    logs.mkdir(parents=True, exist_ok=True)
    cluster = NetnsCluster(ns=ns, host_ip=host_ip, ns_ip=ns_ip, logs=logs)
    try:
        _ip("netns", "add", ns)
        _ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        _ip("link", "set", ns_if, "netns", ns)
        _ip("addr", "add", f"{host_ip}/30", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _ip("netns", "exec", ns, "ip", "addr", "add", f"{ns_ip}/30", "dev", ns_if)
        _ip("netns", "exec", ns, "ip", "link", "set", ns_if, "up")
        _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        cluster.start_scheduler()
        for i in range(workers):
            cluster.start_worker(f"w{i}")
        if workers:
            cluster.wait_for_workers(workers)
        yield cluster
    finally:
        cluster.close()
        _ip("link", "del", host_if, check=False)
