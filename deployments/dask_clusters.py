"""Dask clusters for ``defsentflow run|sweep|claims CONFIG --dask-address ADDRESS`` (docs/distributed.md).

Each function returns a started cluster whose workers are set up as the commands need them: the
catalog guard ``DEFSENTFLOW_WORKER=1`` in the WORKERS' environment only, one thread per worker, the
project's preload, Dask's ``MALLOC_TRIM_THRESHOLD_`` unset, a ``GPU`` resource per GPU worker. Run
this file to keep a cluster up (its scheduler lives in this process) and print its address::

    python deployments/dask_clusters.py cuda                       # one machine, one worker per GPU
    python deployments/dask_clusters.py slurm --jobs 8 --walltime 04:00:00 --tls --shared-dir ~/dask-tmp
    defsentflow run CONFIG --dask-address <the printed address>     # in another shell (with --tls: its env lines)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["WORKER_ENVIRON", "client_tls_env", "local_cuda_cluster", "slurm_cluster", "worker_dask_config"]

WORKER_ENVIRON = {"DEFSENTFLOW_WORKER": "1"}
"""``distributed.nanny.environ``: set in each worker process, never in the process that starts the cluster."""
PRELOAD = "defsentflow.tasks.preload"


def worker_dask_config(path: str | os.PathLike) -> Path:
    """Write the workers' Dask config (``DASK_CONFIG=<path>`` on a worker host): the nanny's
    environment without ``MALLOC_TRIM_THRESHOLD_`` (it cost ~60 % CPU per candidate) and with the
    catalog guard. ``unset MALLOC_TRIM_THRESHOLD_`` in a job script does not help: the nanny sets it."""
    path = Path(path)
    path.write_text("distributed:\n  nanny:\n    pre-spawn-environ:\n      MALLOC_TRIM_THRESHOLD_: null\n"
                    "      OMP_NUM_THREADS: 1\n      MKL_NUM_THREADS: 1\n      OPENBLAS_NUM_THREADS: 1\n"
                    "    environ:\n      DEFSENTFLOW_WORKER: '1'\n")
    return path


def local_cuda_cluster(**kwargs: Any) -> Any:
    """dask-cuda's ``LocalCUDACluster``: one single-threaded worker per visible GPU, pinned with
    ``CUDA_VISIBLE_DEVICES``, each offering ``GPU=1``. dask-cuda replaces the workers' ``env`` with
    their ``CUDA_VISIBLE_DEVICES``, so the guard goes through ``distributed.nanny.environ``."""
    import dask
    from dask_cuda import LocalCUDACluster

    with dask.config.set({"distributed.nanny.environ": dict(WORKER_ENVIRON),
                          "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return LocalCUDACluster(**{"threads_per_worker": 1, "resources": {"GPU": 1}, "preload": [PRELOAD], **kwargs})


def slurm_cluster(*, python: str = sys.executable, walltime: str = "04:00:00", lifetime: str = "3h45m",
                  stagger: str = "5m", memory: str = "32GB", cores: int = 4, gpus: int = 1,
                  dask_config: str | os.PathLike, tls: bool = False, shared_dir: str | os.PathLike | None = None,
                  scheduler_host: str | None = None, **kwargs: Any) -> Any:
    """dask-jobqueue's ``SLURMCluster``: one single-threaded worker per job (``gpus`` GPUs, ``GPU``
    resource), run by ``python`` (the venv's interpreter, wherever this process runs from), with the
    workers' Dask config at ``dask_config`` (a shared path: :func:`worker_dask_config`). Workers
    retire at ``lifetime`` (spread by ``stagger``) before Slurm's ``walltime`` kills them; pair it
    with ``cluster.adapt(minimum_jobs=..., maximum_jobs=...)`` so that new jobs replace them.
    ``tls``: temporary certificates (``Security.temporary()``), written for the workers to ``shared_dir``."""
    from dask_jobqueue import SLURMCluster
    from distributed.security import Security

    extra = ["--preload", PRELOAD, "--lifetime", lifetime, "--lifetime-stagger", stagger]
    if gpus:
        extra += ["--resources", f"GPU={gpus}"]
    # one worker thread (one candidate at a time); job_cpu books the cores its torch threads use
    options: dict[str, Any] = {"python": python, "cores": 1, "job_cpu": cores, "processes": 1, "memory": memory,
                               "walltime": walltime,
                               "worker_extra_args": extra,
                               "job_extra_directives": [f"--gres=gpu:{gpus}"] if gpus else [],
                               "job_script_prologue": [f"export DASK_CONFIG={dask_config}"]}
    if scheduler_host:
        options["scheduler_options"] = {"host": scheduler_host}
    if tls:
        options.update(security=Security.temporary(), shared_temp_directory=str(shared_dir or Path.cwd()))
    return SLURMCluster(**{**options, **kwargs})


def client_tls_env(security: Any, folder: str | os.PathLike) -> dict[str, str]:
    """Write the client's part of ``security`` to ``folder`` (private) and return the environment
    that makes ``defsentflow`` connect with it (Dask reads its config from ``DASK_*`` variables)."""
    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    tls = security.get_tls_config_for_role("client")
    env = {}
    for key, name in (("ca_file", "CA_FILE"), ("cert", "CLIENT__CERT"), ("key", "CLIENT__KEY")):
        value = tls[key]
        if "-----BEGIN" in value:  # a temporary certificate lives in memory: write it
            path = folder / f"client-{key}.pem"
            path.write_text(value)
            path.chmod(0o600)
            value = str(path)
        env[f"DASK_DISTRIBUTED__COMM__TLS__{name}"] = value
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["cuda", "slurm"])
    ap.add_argument("--jobs", type=int, default=8, help="slurm: at most this many worker jobs (adapt)")
    ap.add_argument("--walltime", default="04:00:00")
    ap.add_argument("--lifetime", default="3h45m", help="slurm: workers retire after this (before the walltime)")
    ap.add_argument("--tls", action="store_true", help="slurm: temporary TLS certificates")
    ap.add_argument("--shared-dir", default=str(Path.home() / "dask-tmp"),
                    help="slurm: a folder every host sees (the workers' Dask config and certificates)")
    args = ap.parse_args(argv)
    env: dict[str, str] = {}
    if args.kind == "cuda":
        cluster = local_cuda_cluster()
    else:
        shared = Path(args.shared_dir)
        shared.mkdir(parents=True, exist_ok=True)
        cluster = slurm_cluster(walltime=args.walltime, lifetime=args.lifetime,
                                dask_config=worker_dask_config(shared / "dask-worker.yaml"), tls=args.tls,
                                shared_dir=shared)
        cluster.adapt(minimum_jobs=1, maximum_jobs=args.jobs)
        if args.tls:
            env = client_tls_env(cluster.security, shared / "client-tls")
    print(f"scheduler: {cluster.scheduler_address}  (keep this process running; Ctrl-C stops the cluster)")
    for k, v in env.items():
        print(f"export {k}={v}")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
