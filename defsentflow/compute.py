"""Where fanned-out work runs: the ``compute:`` config section, shared by every stage, and what a
worker must offer before a command hands it work.

Neither ``address`` nor ``local_workers``: the sequential path, in the command's process.
``address``: an existing Dask scheduler (``dask scheduler`` + ``dask worker``, dask-jobqueue's
``SLURMCluster``, dask-cuda's ``LocalCUDACluster``, Kubernetes). ``local_workers: N``: a
``LocalCluster`` of N single-threaded worker processes that the command starts and stops.

Every path runs each fanned-out call at ``threads_per_candidate`` torch threads (default
:data:`~defsentflow.fanout.DEFAULT_THREADS`, what a single-threaded worker runs), so the weights
are the same whichever executor trained them.

The command passes the settings to its flows (and a deployment to its flow run) through the
environment variables below, so one cluster serves every stage and subflow of a command.

:func:`worker_report` runs on each worker when a command attaches (``tasks/fanout.py``);
:func:`attach_problems` turns the reports into one-line refusals.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from defsentflow import __version__
from defsentflow.config_tools import LIMITS, ConfigSection
from defsentflow.fanout import DEFAULT_THREADS, WORKER_ENV
from defsentflow.storage.hashing import code_version

__all__ = ["ADDRESS_ENV", "GPUS_ENV", "THREADS_ENV", "TIMEOUT_ENV", "ComputeSection", "attach_problems",
           "check_dask_address", "compute_from_env", "compute_to_env", "flow_process_problem", "route_address", "shared_paths",
           "worker_report"]

ADDRESS_ENV = "DEFSENTFLOW_DASK_ADDRESS"
# scheme://host:port (host: a name, an IPv4 address or [IPv6]); the scheme may be left out (tcp)
_ADDRESS = re.compile(r"(?:(?:tcp|tls|ucx|ws|wss)://)?(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]+\])"
                      r":(?P<port>[0-9]{1,5})")
GPUS_ENV = "DEFSENTFLOW_GPUS_PER_CANDIDATE"
THREADS_ENV = "DEFSENTFLOW_THREADS_PER_CANDIDATE"
TIMEOUT_ENV = "DEFSENTFLOW_WORKER_TIMEOUT"


def check_dask_address(text: str) -> str:
    """``text`` if it is a Dask scheduler address, else a ValueError saying what one looks like."""
    m = _ADDRESS.fullmatch(text.strip())
    if m is None or not 0 < int(m.group("port")) < 65536:
        raise ValueError(f"{text[:80]!r} is not a Dask scheduler address: expected tcp://HOST:PORT (port 1-65535), "
                         "e.g. tcp://10.0.0.5:8786")
    return text.strip()


class ComputeSection(ConfigSection):
    """``compute:``: the Dask cluster fanned-out work (PST candidates, harvest batches, sweep points) runs on."""

    address: str | None = Field(None, description="an existing Dask scheduler, e.g. tcp://host:8786")
    local_workers: int = Field(0, ge=0, le=LIMITS["workers"], description="start a LocalCluster of this many single-threaded worker "
                                                    "processes for the command (0: sequential, in process)")
    gpus_per_candidate: float = Field(0, ge=0, le=64, description="Dask worker resource GPU each candidate asks for "
                                                           "(workers started with --resources GPU=1)")
    threads_per_candidate: int = Field(DEFAULT_THREADS, ge=1, le=LIMITS["workers"],
                                       description="torch threads of every candidate on every path (sequential, "
                                                   "local or external workers): the same count gives the same weights")
    worker_timeout: float = Field(60, gt=0, le=86_400, description="seconds to wait for workers (with GPU resources when "
                                                                   "asked) when attaching; also the scheduler's "
                                                                   "no-workers timeout for tasks no worker can run")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        """A Dask scheduler address (``tcp://host:8786``, ``tls://...``, ``host:8786``): a malformed one is
        refused here, in one line, instead of a connection attempt that times out minutes later."""
        return None if v is None else check_dask_address(v)

    @field_validator("threads_per_candidate", mode="before")
    @classmethod
    def _default_threads(cls, v: Any) -> Any:
        return DEFAULT_THREADS if v is None else v  # null (older configs): the default, as everywhere

    @property
    def distributed(self) -> bool:
        return bool(self.address or self.local_workers)


def compute_to_env(compute: ComputeSection, address: str | None = None) -> dict[str, str]:
    """The environment that hands ``compute`` (and a started cluster's ``address``) to flows."""
    env = {GPUS_ENV: str(compute.gpus_per_candidate), THREADS_ENV: str(compute.threads_per_candidate),
           TIMEOUT_ENV: str(compute.worker_timeout)}
    if address or compute.address:
        env[ADDRESS_ENV] = str(address or compute.address)
    return env


def compute_from_env(env: Mapping[str, str] | None = None, default: ComputeSection | Mapping[str, Any] | None = None
                     ) -> ComputeSection:
    """``default`` (a config's ``compute:``) overridden by what the command put in the environment."""
    env = os.environ if env is None else env
    base = ComputeSection.model_validate(default or {}) if not isinstance(default, ComputeSection) else default
    update: dict[str, Any] = {}
    if env.get(ADDRESS_ENV):
        update["address"] = env[ADDRESS_ENV]
    if env.get(GPUS_ENV):
        update["gpus_per_candidate"] = float(env[GPUS_ENV])
    if env.get(THREADS_ENV):
        update["threads_per_candidate"] = int(env[THREADS_ENV])
    if env.get(TIMEOUT_ENV):
        update["worker_timeout"] = float(env[TIMEOUT_ENV])
    return base.model_copy(update=update)


def shared_paths(cfg: Any, root: str | os.PathLike) -> dict[str, str]:
    """What every worker must see at the flow host's paths: the data root, the base model (when it
    is a path) and the selection's ``data_dir``. ``cfg``: a pipeline or harvest config."""
    from defsentflow.encoders.loading import resolve_model_path  # lazy: loads torch

    paths = {"data root": str(Path(root).resolve())}
    train = getattr(cfg, "pst", None) or getattr(cfg, "defsent", None)
    if train is not None:
        base = resolve_model_path(train.base_model)
        if Path(base).exists():  # a Hugging Face id is looked up in each host's cache
            paths["base model"] = str(Path(base).resolve())
        data_dir = getattr(train, "data_dir", None)
        if data_dir and Path(data_dir).exists():
            paths["data_dir"] = str(Path(data_dir).resolve())
    encoder = getattr(cfg, "encoder", None)
    if isinstance(encoder, str) and Path(encoder).exists():
        paths["encoder"] = str(Path(encoder).resolve())
    return paths


def flow_process_problem(env: Mapping[str, str] | None = None) -> str | None:
    """Why this (flow) process must not run a command: it carries the workers' catalog guard."""
    env = os.environ if env is None else env
    if env.get(WORKER_ENV, "") not in ("", "0"):
        return (f"{WORKER_ENV}={env[WORKER_ENV]} is set in this process's environment, where the flow runs and "
                f"writes the catalog; it belongs on the Dask workers only: unset it here (e.g. `env -u {WORKER_ENV} "
                "defsentflow ...`) and set it on the worker command line")
    return None


def worker_report(paths: Mapping[str, str], api_url: str | None = None) -> dict[str, Any]:
    """What a worker offers (run on each worker by ``client.run``): the guard, the package and code
    version, the interpreter, the CUDA devices torch sees, which ``paths`` it lacks (the data root
    must also be writable) and whether it reaches the Prefect API at ``api_url``."""
    import torch  # lazy: torch takes seconds to load; the workers have it loaded by their preload

    missing = [label for label, p in paths.items() if not os.path.exists(p)]
    root = paths.get("data root")
    if root and root not in missing and not os.access(root, os.W_OK | os.X_OK):
        missing.append("data root (writable)")
    api = None
    if api_url:
        try:
            with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=5) as r:
                api = "ok" if r.status == 200 else f"HTTP {r.status}"
        except OSError as exc:
            api = " ".join(str(exc).split())[:160]
    return {"guard": os.environ.get(WORKER_ENV, ""), "version": __version__, "code": code_version(),
            "python": sys.executable, "host": socket.gethostname(), "missing": missing, "api": api,
            "cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0}


def attach_problems(workers: Mapping[str, Mapping[str, Any]], reports: Mapping[str, Mapping[str, Any]], *,
                    compute: ComputeSection, version: str, code: str, paths: Mapping[str, str]) -> list[str]:
    """One line per thing a cluster lacks for this command (empty: ready). ``workers``: the
    scheduler's worker info (address -> ``nthreads``, ``resources``, ``name``); ``reports``: address
    -> :func:`worker_report`."""
    problems: list[str] = []

    def each(what: str, bad: list[str], fix: str) -> None:
        if bad:
            shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
            problems.append(f"{len(bad)} of {len(workers)} workers {what}: {shown}; {fix}")

    each("lack the catalog guard", [a for a in workers if reports.get(a, {}).get("guard") in ("", "0", None)],
         f"start them with {WORKER_ENV}=1 in their environment (e.g. `{WORKER_ENV}=1 dask worker ...`; "
         "LocalCUDACluster: dask.config distributed.nanny.environ)")
    each("run several threads", [f"{a} (nthreads={w.get('nthreads')})" for a, w in workers.items()
                                  if int(w.get("nthreads") or 1) != 1],
         "start them with --nthreads 1 (one candidate per worker process; threads_per_candidate sets its torch threads)")
    each("run other code", [f"{a} ({r.get('version')}, {r.get('code')})" for a, r in reports.items()
                            if (r.get("version"), r.get("code")) != (version, code)],
         f"install the flow host's defsentflow ({version}, code {code}) on them")
    for label in paths:
        each(f"do not see the {label} {paths[label]}", [a for a, r in reports.items() if label in r.get("missing", [])],
             "share it at the same path on every host (see docs/distributed.md, 'What must be shared')")
    if "data root" in paths:
        each(f"cannot write the data root {paths['data root']}",
             [a for a, r in reports.items() if "data root (writable)" in r.get("missing", [])],
             "mount it read-write on the workers")
    each("do not reach the Prefect API", [f"{a} ({r.get('api')})" for a, r in reports.items()
                                          if r.get("api") not in (None, "ok")],
         "set PREFECT_API_URL to a Prefect server that the workers can reach (`prefect server start --host 0.0.0.0`)")
    if compute.gpus_per_candidate > 0:
        each("offer GPU resources without a CUDA device",
             [a for a, w in workers.items() if float((w.get("resources") or {}).get("GPU", 0)) > 0
              and not reports.get(a, {}).get("cuda")],
             "install a CUDA build of torch there, or start them without --resources GPU")
    return problems


def route_address(hosts: list[str]) -> str:
    """The address of this host's interface that routes to ``hosts`` (the workers): where a server
    the workers must reach listens. 127.0.0.1 when every host is this one.

    Raises:
        ValueError: the hosts are reached through different interfaces of this host.
    """
    chosen = set()
    for host in hosts:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))  # no packet is sent: the kernel picks the route and its source address
            chosen.add(s.getsockname()[0])
    if not chosen or chosen <= {"127.0.0.1"}:
        return "127.0.0.1"
    outside = sorted(chosen - {"127.0.0.1"})
    if len(outside) > 1:
        raise ValueError(f"the workers are reached through several interfaces ({', '.join(outside)}): set "
                         "PREFECT_API_URL to a Prefect server they can all reach")
    return outside[0]  # workers on this host, if any, reach that address too
