"""docs/distributed.md's recipes, built as far as this machine allows (deployments/dask_clusters.py):
the Slurm job script, the workers' Dask config, the TLS client, the dask-cuda worker spec, the
``tag:gpu`` limit. The plain ``dask worker`` recipe runs in tests/integration/test_cluster_netns.py."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "docs" / "distributed.md").read_text()


@pytest.fixture(scope="module")
def recipes():
    spec = importlib.util.spec_from_file_location("dask_clusters", REPO / "deployments" / "dask_clusters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_workers_dask_config_unsets_malloc_and_guards_only_the_workers(recipes, tmp_path):
    import dask
    from distributed.nanny import _get_env_variables

    config = dask.config.collect(paths=[str(recipes.worker_dask_config(tmp_path / "w.yaml"))], env={})
    with dask.config.set(config):
        assert "MALLOC_TRIM_THRESHOLD_" not in _get_env_variables("distributed.nanny.pre-spawn-environ")
        assert "DEFSENTFLOW_WORKER" not in _get_env_variables("distributed.nanny.pre-spawn-environ")  # not the nanny's
        assert _get_env_variables("distributed.nanny.environ") == {"DEFSENTFLOW_WORKER": "1"}  # the worker's


def test_the_slurm_recipe(recipes, tmp_path):
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed (pip install 'defsentflow[cluster]')")
    shared = tmp_path / "shared"
    shared.mkdir()
    cluster = recipes.slurm_cluster(dask_config=shared / "w.yaml", tls=True, shared_dir=shared, gpus=1, cores=4,
                                    scheduler_host="127.0.0.1")
    try:
        script = cluster.job_script()
        worker = next(line for line in script.splitlines() if "distributed.cli.dask_worker" in line).split()
        assert worker[0] == sys.executable  # the venv's interpreter, not whatever `python` a job finds
        assert worker[3] == cluster.scheduler_address and worker[3].startswith("tls://")
        flags = dict(zip(worker[4:], worker[5:]))
        assert flags["--nthreads"] == "1" and flags["--preload"] == "defsentflow.tasks.preload"
        assert flags["--lifetime"] == "3h45m" and flags["--lifetime-stagger"] == "5m" and flags["--resources"] == "GPU=1"
        assert Path(flags["--tls-ca-file"]).parent == shared and Path(flags["--tls-key"]).is_file()
        assert f"export DASK_CONFIG={shared / 'w.yaml'}" in script and "unset MALLOC" not in script
        assert "#SBATCH --gres=gpu:1" in script and "#SBATCH --cpus-per-task=4" in script
        assert "#SBATCH -t 04:00:00" in script
        adaptive = cluster.adapt(minimum_jobs=1, maximum_jobs=8)
        assert (adaptive.minimum, adaptive.maximum) == (1, 8)
    finally:
        cluster.close()


def test_a_tls_client_connects_with_the_recipes_environment(recipes, tmp_path, monkeypatch):
    import dask
    from distributed import Client, LocalCluster
    from distributed.security import Security

    security = Security.temporary()
    with LocalCluster(n_workers=0, processes=False, protocol="tls://", host="127.0.0.1", security=security,
                      dashboard_address=None) as cluster:
        env = recipes.client_tls_env(security, tmp_path / "tls")
        assert all(Path(p).is_file() and Path(p).stat().st_mode & 0o077 == 0 for p in env.values())
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        dask.config.refresh()  # as a new `defsentflow` process reads its environment
        try:
            with Client(cluster.scheduler_address, timeout=20) as client:
                assert client.scheduler_info()["address"].startswith("tls://")  # no security object: the config's
        finally:
            monkeypatch.undo()
            dask.config.refresh()


def test_the_cuda_recipe_guards_only_the_workers(recipes):
    pytest.importorskip("dask_cuda", reason="dask-cuda is not installed (pip install 'defsentflow[cluster]')")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("dask-cuda's LocalCUDACluster needs a CUDA device")
    import os

    from distributed import Client

    with recipes.local_cuda_cluster() as cluster, Client(cluster) as client:
        envs = client.run(lambda: (os.environ.get("DEFSENTFLOW_WORKER"), os.environ.get("CUDA_VISIBLE_DEVICES"),
                                   os.environ.get("MALLOC_TRIM_THRESHOLD_")))
        assert {e[0] for e in envs.values()} == {"1"} and all(e[1] and e[2] is None for e in envs.values())
        assert all(w["resources"] == {"GPU": 1} and w["nthreads"] == 1
                   for w in client.scheduler_info(n_workers=-1)["workers"].values())
    assert os.environ.get("DEFSENTFLOW_WORKER") is None


def test_the_tag_gpu_limit_caps_gpu_tasks(prefect_test_harness):
    from prefect import flow, task
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.task_runners import ThreadPoolTaskRunner

    assert "prefect gcl create tag:gpu --limit 8" in DOCS
    spans = []

    @task(tags=["gpu"])
    def on_gpu(i: int) -> None:
        t0 = time.monotonic()
        time.sleep(0.5)
        spans.append((t0, time.monotonic()))

    @flow(task_runner=ThreadPoolTaskRunner(max_workers=2))
    def two() -> None:
        for f in [on_gpu.submit(i) for i in range(2)]:
            f.result()

    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name="tag:gpu", limit=1))
        try:
            two()
        finally:
            client.delete_global_concurrency_limit_by_name("tag:gpu")
    (a0, a1), (b0, b1) = sorted(spans)
    assert b0 >= a1  # one at a time: the engine took the limit named tag:gpu
