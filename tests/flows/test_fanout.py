"""PST candidates fanned out to a 2-worker ``LocalCluster`` of single-threaded processes: the same
candidates, scores, choice and catalog rows as the sequential run; a worker SIGKILLed mid-candidate
changes nothing; records written before a kill are registered on the re-run without retraining; a
catalog opened on a worker raises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from defsentflow.compute import ComputeSection
from defsentflow.evaluation.selection import selection_score
from defsentflow.fanout import KILL_AFTER_STEPS_ENV, KILL_MARKER_ENV, WORKER_ENV
from defsentflow.storage import Catalog
from defsentflow.training.pst import PstSteps, run_pst
from tests.dictionary_tables import register_table
from tests.training.test_pst_schedule import dictionary, section, toy_dictionary  # noqa: F401 (a fixture)

SEQUENTIAL = PstSteps(scorer=selection_score, threads=1)  # the workers' thread count per candidate


@pytest.fixture(scope="module")
def cluster():
    """The command's LocalCluster, started as ``--local-workers 2`` starts it; yields (address, client)."""
    from distributed import Client

    from defsentflow.tasks.fanout import compute_cluster

    with compute_cluster(ComputeSection(local_workers=2, threads_per_candidate=1)) as address:
        with Client(address) as client:
            yield address, client


def _fanned() -> PstSteps:
    from defsentflow.tasks.fanout import DaskFanOut, fan_out_from_env

    fan_out = fan_out_from_env("pst-candidate")
    assert isinstance(fan_out, DaskFanOut)  # the command's cluster, found through the environment
    return PstSteps(scorer=selection_score, threads=1, fan_out=fan_out)


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


def _duplicates(home: Path) -> dict[str, int]:
    cat = Catalog(home)
    return {t: cat.query(f"SELECT count(*) - count(DISTINCT {k}) AS n FROM {t}")[0]["n"]
            for t, k in (("artifacts", "artifact_key"), ("models", "model_id"),
                         ("metrics", "(model_id, task, setting, metric, pooling)"))}


@pytest.mark.usefixtures("dictionary")
def test_two_workers_give_the_sequential_result(cluster, tiny_bert_dir, tmp_path, monkeypatch):
    sec = section(tiny_bert_dir, steps=2, seeds=[0, 1])
    seq = _run(sec, tmp_path / "seq", SEQUENTIAL, monkeypatch)
    par = _run(sec, tmp_path / "par", _fanned(), monkeypatch)
    assert len(seq["candidates"]) == 1 + 2 + 2 and all(c[3] is not None for c in seq["candidates"])
    assert par == seq  # keys, scores, the chosen candidate and the catalog rows, bit for bit
    assert os.environ.get(WORKER_ENV) is None  # the guard is the workers', never the flow process's


@pytest.mark.usefixtures("dictionary")
def test_a_worker_killed_mid_candidate_changes_nothing(cluster, tiny_bert_dir, tmp_path, monkeypatch):
    _, client = cluster
    marker = tmp_path / "killed"
    hook = {KILL_AFTER_STEPS_ENV: "1", KILL_MARKER_ENV: str(marker)}
    client.run(lambda: os.environ.update(hook))
    try:
        sec = section(tiny_bert_dir, steps=1, seeds=[0, 1])
        par = _run(sec, tmp_path / "par", _fanned(), monkeypatch)
    finally:
        client.run(lambda: [os.environ.pop(k, None) for k in hook])
    assert marker.exists()  # a worker did die after one training step
    seq = _run(sec, tmp_path / "seq", SEQUENTIAL, monkeypatch)
    assert par == seq
    assert _duplicates(tmp_path / "par") == {"artifacts": 0, "models": 0, "metrics": 0}


def test_a_catalog_opened_on_a_worker_raises(cluster, home):
    from defsentflow.storage.catalog import CatalogAccessError

    _, client = cluster
    with pytest.raises(CatalogAccessError, match="worker"):
        client.submit(lambda root: Catalog(root).query("SELECT 1"), str(home), pure=False).result()


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
    monkeypatch.setattr(revdict, "evaluate_revdict", forbidden)
    res = run_pst(sec, run_id="k2", steps=SEQUENTIAL)
    assert len(res.steps[1].candidates) == 2
    assert len(Catalog().query("SELECT * FROM models WHERE method = 'defsent_plus'")) == 2
    assert _duplicates(home) == {"artifacts": 0, "models": 0, "metrics": 0}


def test_an_existing_cluster_is_used_as_given_and_the_flags_override_the_config(cluster, monkeypatch, capsys):
    import argparse

    from defsentflow.cli.compute import compute_for
    from defsentflow.compute import ADDRESS_ENV
    from defsentflow.tasks.fanout import compute_cluster

    address, _ = cluster
    monkeypatch.delenv(ADDRESS_ENV)
    with compute_cluster(ComputeSection(address=address, gpus_per_candidate=1)) as got:
        assert got == address and os.environ[ADDRESS_ENV] == address
    assert ADDRESS_ENV not in os.environ and "dashboard" in capsys.readouterr().out
    config = ComputeSection(local_workers=4, threads_per_candidate=2)
    flags = argparse.Namespace(dask_address="tcp://h:8786", local_workers=None)
    assert compute_for(flags, config).model_dump() == {"address": "tcp://h:8786", "local_workers": 0,
                                                       "gpus_per_candidate": 0.0, "threads_per_candidate": 2}
    assert compute_for(argparse.Namespace(dask_address=None, local_workers=0), config).local_workers == 0


def _die(spec):
    os.kill(os.getpid(), 9)


def test_a_candidate_that_keeps_killing_its_worker_is_a_one_line_error_naming_it(cluster):
    from defsentflow.fanout import CandidateLostError
    from defsentflow.tasks.fanout import DaskFanOut

    address, client = cluster
    before = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures)
    client.run_on_scheduler(lambda dask_scheduler: setattr(dask_scheduler, "allowed_failures", 0))
    try:
        with pytest.raises(CandidateLostError, match=r"^step 1 mean-amp, seed 3: lost with its Dask worker") as err:
            DaskFanOut(address)(_die, [({"label": "step 1 mean-amp, seed 3"},)])
        assert "\n" not in str(err.value)
    finally:
        client.run_on_scheduler(lambda dask_scheduler: setattr(dask_scheduler, "allowed_failures", before))
