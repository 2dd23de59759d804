"""The flows' fan-out on a Dask cluster of another host: a scheduler here and two single-threaded
workers in a network namespace (tests/netns.py; a LocalCluster where namespaces cannot be made, the
remote-only checks skipped). The other host's workers train the sequential run's candidates, scores,
choice and catalog rows; every executor runs a call at the same threads; a catalog opened on a worker
raises; a cancelled command stops its running calls at their next checkpoint and drops its queued
ones; GPUs asked of a CPU cluster fail in one line within the timeout; records written before a kill
are registered by the re-run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import cloudpickle
import pytest

from defsentflow.compute import ComputeSection
from defsentflow.fanout import WORKER_ENV
from defsentflow.storage import Catalog
from defsentflow.training.pst import PstSteps, run_pst
from tests.dictionary_tables import register_table
from tests.training.test_pst_schedule import dictionary, section, toy_dictionary  # noqa: F401 (a fixture)

pytestmark = pytest.mark.xdist_group("netns")  # one process: one netns cluster (a session fixture) for both files
SEQUENTIAL = PstSteps()  # the library's default: every call at compute's default threads
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the other host runs this file's functions by value


@pytest.fixture(scope="module")
def cluster(request, prefect_test_harness):
    """The command's cluster as ``--dask-address`` attaches to it, with a Prefect API on the address
    the workers route to; yields (address, client, the workers' host or None for a LocalCluster)."""
    from distributed import Client

    from defsentflow.tasks.cluster import api_host, check_api, compute_cluster
    from defsentflow.tasks.server import local_api

    try:
        netns = request.getfixturevalue("netns_dask")
        compute, remote = ComputeSection(address=netns.address), netns.ns_ip
    except pytest.skip.Exception:
        compute, remote = ComputeSection(local_workers=2), None
    saved = os.environ.pop("PREFECT_API_URL", None)
    try:
        with compute_cluster(compute) as address, local_api(host=api_host(address)) as url, \
                Client(address) as client:
            check_api(address, url)
            yield address, client, remote
    finally:
        if saved is not None:
            os.environ["PREFECT_API_URL"] = saved


def _fanned() -> PstSteps:
    from defsentflow.tasks.fanout import DaskFanOut, fan_out_from_env

    fan_out = fan_out_from_env("pst-candidate")
    assert isinstance(fan_out, DaskFanOut)  # the command's cluster, found through the environment
    return PstSteps(fan_out=fan_out)


def _run(sec, home: Path, steps: PstSteps, monkeypatch, run_id: str = "same"):
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(home))
    register_table("toy", toy_dictionary(), home)  # the candidates read it on the workers, by reference
    res = run_pst(sec, run_id=run_id, steps=steps)
    cat = Catalog(home)
    strip = lambda v: v.replace(str(home), "<home>") if isinstance(v, str) else v  # noqa: E731
    rows = {
        "pst_steps": cat.query("SELECT step, seed, model_id, selection_score, chosen, entry_matrix_path, pooling "
                               "FROM pst_steps ORDER BY step, model_id, pooling"),
        "artifacts": cat.query("SELECT artifact_key, kind, name FROM artifacts ORDER BY artifact_key"),
        "models": cat.query("SELECT model_id, method, pooling, artifact_key FROM models ORDER BY model_id"),
        "metrics": cat.query("SELECT model_id, task, setting, metric, value FROM metrics "
                             "ORDER BY model_id, task, setting, metric"),
    }
    rows = {t: [{k: strip(v) for k, v in r.items()} for r in rs] for t, rs in rows.items()}
    cands = [(c.step, c.seed, c.artifact_key, c.score) for s in res.steps for c in s.candidates]
    return {"candidates": cands, "winner": (res.winner.artifact_key, res.winner.score), "rows": rows}


@pytest.mark.usefixtures("dictionary")
def test_the_other_hosts_workers_give_the_sequential_result(cluster, tiny_bert_dir, tmp_path, monkeypatch):
    from distributed.comm import get_address_host

    _, client, remote = cluster
    if remote is not None:  # every worker is in the namespace: whatever ran, ran on the other host
        assert {get_address_host(a) for a in client.scheduler_info(n_workers=-1)["workers"]} == {remote}
    sec = section(tiny_bert_dir, steps=1, seeds=[0, 1])
    seq = _run(sec, tmp_path / "seq", SEQUENTIAL, monkeypatch)
    par = _run(sec, tmp_path / "par", _fanned(), monkeypatch)
    assert len(seq["candidates"]) == 1 + 2 and all(c[3] is not None for c in seq["candidates"])
    assert par == seq  # keys, scores, the chosen candidate and the catalog rows, bit for bit
    assert os.environ.get(WORKER_ENV) is None  # the guard is the workers', never the flow process's


def _threads(_: int) -> tuple[int, int]:
    import torch
    from threadpoolctl import threadpool_info

    blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return torch.get_num_threads(), max(blas or [0])


def test_every_executor_runs_a_call_at_the_same_threads(cluster, monkeypatch):
    from defsentflow.fanout import Sequential, sequential
    from defsentflow.tasks.fanout import DaskFanOut, TaskFanOut

    address, _, _ = cluster
    import torch

    before = torch.get_num_threads()
    assert sequential(_threads, [(0,)]) == [(1, 1)]  # the library's default path: compute's default, 1
    assert torch.get_num_threads() == before  # and the process's own setting afterwards
    assert DaskFanOut(address)(_threads, [(0,), (1,)]) == [(1, 1), (1, 1)]
    assert TaskFanOut()(_threads, [(0,)]) == [(1, 1)]
    assert Sequential(2)(_threads, [(0,)]) == DaskFanOut(address, threads=2)(_threads, [(0,)]) == [(2, 2)]


def test_a_catalog_opened_on_a_worker_raises(cluster, home):
    from defsentflow.storage.catalog import CatalogAccessError

    _, client, _ = cluster
    with pytest.raises(CatalogAccessError, match="worker"):
        client.submit(lambda root: Catalog(root).query("SELECT 1"), str(home), pure=False).result()


def _held(i: int, marks: str) -> int:
    """A call that checkpoints every 50 ms for up to a minute (as a long training does)."""
    from defsentflow.fanout import at_checkpoint

    Path(marks, f"started-{i}").write_text(str(os.getpid()))
    for step in range(1200):
        at_checkpoint(step)
        time.sleep(0.05)
    return i


def test_a_cancelled_command_stops_running_calls_at_a_checkpoint_and_drops_queued_ones(cluster, tmp_path):
    from defsentflow.fanout import CandidateStoppedError
    from defsentflow.tasks.cluster import session_for
    from defsentflow.tasks.fanout import DaskFanOut

    address, client, _ = cluster
    wait = DaskFanOut(address, name="held").submit(_held, [(i, str(tmp_path)) for i in range(3)])
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("started-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(list(tmp_path.glob("started-*"))) == 2  # two workers, one call each; the third queued
    t0 = time.monotonic()
    session_for(address).cancel()  # what Ctrl-C or SIGTERM of the command does on its way out
    with pytest.raises((CandidateStoppedError, Exception)):
        wait()
    while any(client.processing().values()) and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    assert not any(client.processing().values()), "the running calls did not stop"
    assert time.monotonic() - t0 < 10  # at their next checkpoint, not at the end of their minute
    time.sleep(1)
    assert len(list(tmp_path.glob("started-*"))) == 2  # the queued call never started


def test_gpus_asked_of_a_cpu_cluster_fail_in_one_line_within_the_timeout(cluster, monkeypatch, capsys):
    import argparse

    from defsentflow.cli.compute import compute_for
    from defsentflow.compute import ADDRESS_ENV
    from defsentflow.tasks.cluster import ClusterAttachError, compute_cluster

    address, _, _ = cluster
    for key in (ADDRESS_ENV, "DEFSENTFLOW_COMPUTE_OWNER"):
        monkeypatch.delenv(key, raising=False)
    t0 = time.monotonic()
    with pytest.raises(ClusterAttachError, match=r"offers GPU=1 after 2s") as err:
        with compute_cluster(ComputeSection(address=address, gpus_per_candidate=1, worker_timeout=2)):
            pass
    assert time.monotonic() - t0 < 2 + 10 and "\n" not in str(err.value)
    assert ADDRESS_ENV not in os.environ
    monkeypatch.setenv(WORKER_ENV, "1")  # the guard in the flow process: its own message, before anything
    with pytest.raises(ClusterAttachError, match=r"^DEFSENTFLOW_WORKER=1 is set in this process's environment"):
        with compute_cluster(ComputeSection(address=address)):
            pass
    config = ComputeSection(local_workers=4, threads_per_candidate=2)
    flags = argparse.Namespace(dask_address="tcp://h:8786", local_workers=None)
    assert compute_for(flags, config).model_dump() == {"address": "tcp://h:8786", "local_workers": 0,
                                                       "gpus_per_candidate": 0.0, "threads_per_candidate": 2,
                                                       "worker_timeout": 60.0}
    assert compute_for(argparse.Namespace(dask_address=None, local_workers=0), config).local_workers == 0


def _die(spec):
    os.kill(os.getpid(), 9)


def test_a_candidate_that_keeps_killing_its_worker_is_a_one_line_error_naming_it(cluster):
    from defsentflow.fanout import CandidateLostError
    from defsentflow.tasks.fanout import DaskFanOut

    address, client, _ = cluster
    before = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures)
    client.run_on_scheduler(lambda dask_scheduler: setattr(dask_scheduler, "allowed_failures", 0))
    try:
        with pytest.raises(CandidateLostError, match=r"^step 1 mean-amp, seed 3: lost with its Dask worker") as err:
            DaskFanOut(address)(_die, [({"label": "step 1 mean-amp, seed 3"},)])
        assert "\n" not in str(err.value)
    finally:
        client.run_on_scheduler(lambda dask_scheduler: setattr(dask_scheduler, "allowed_failures", before))
    client.wait_for_workers(2, timeout=120)  # the nanny restarted it


def _duplicates(home: Path) -> dict[str, int]:
    cat = Catalog(home)
    return {t: cat.query(f"SELECT count(*) - count(DISTINCT {k}) AS n FROM {t}")[0]["n"]
            for t, k in (("artifacts", "artifact_key"), ("models", "model_id"),
                         ("metrics", "(model_id, task, setting, metric, pooling)"))}


@pytest.mark.usefixtures("dictionary")
def test_records_written_before_a_kill_are_registered_by_the_rerun(tiny_bert_dir, home, monkeypatch):
    import defsentflow.evaluation.revdict as revdict
    import defsentflow.training.loop as loop

    real = Catalog.register_records

    def killed_before_training_records(self, records):
        if any(r["kind"] == "model" for r in records):
            raise KeyboardInterrupt("killed before registering")
        return real(self, records)

    monkeypatch.setattr(Catalog, "register_records", killed_before_training_records)
    sec = section(tiny_bert_dir, steps=1, seeds=[0, 1])
    with pytest.raises(KeyboardInterrupt):
        run_pst(sec, run_id="k1", steps=SEQUENTIAL)
    assert not Catalog().query("SELECT * FROM models WHERE method = 'defsent_plus'")
    monkeypatch.setattr(Catalog, "register_records", real)

    def forbidden(*a, **kw):
        raise AssertionError("the re-run must not train or score again")

    monkeypatch.setattr(loop, "train_encoder", forbidden)
    monkeypatch.setattr(revdict, "evaluate_revdict_runs", forbidden)
    res = run_pst(sec, run_id="k2", steps=SEQUENTIAL)
    assert len(res.steps[1].candidates) == 2
    assert len(Catalog().query("SELECT * FROM models WHERE method = 'defsent_plus'")) == 2
    assert _duplicates(home) == {"artifacts": 0, "models": 0, "metrics": 0}


# -- one call, whatever runs it (defsentflow/fanout.py; was tests/test_fanout_calls.py) -------------------
def _process_threads() -> int:
    import torch

    return torch.get_num_threads()


def test_a_call_runs_at_its_settings_threads_and_the_process_keeps_its_own():
    import torch

    from defsentflow.fanout import CallSettings, Sequential, in_turn, run_call

    before = torch.get_num_threads()
    assert Sequential(3)(_process_threads, [(), ()]) == [3, 3]
    assert run_call(_process_threads, (), CallSettings(threads=None)) == before  # None: the process's own
    assert in_turn(_process_threads, [()]) == [before]  # points and arms: nothing set around the whole run
    assert torch.get_num_threads() == before


def test_a_call_that_asked_for_a_gpu_refuses_the_cpu():
    import torch

    from defsentflow.fanout import CallSettings, GpuMissingError, run_call, worker_device

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(GpuMissingError, match=r"^asked for a GPU \(compute.gpus_per_candidate: 1\) but would run on cpu"):
        run_call(worker_device, ("auto",), CallSettings(gpus=1))
    assert run_call(worker_device, ("auto",), CallSettings(gpus=0)) == "auto"
