"""The ``pretrain`` flow runs the library's sequencer: the same catalog rows and model as the CLI's
local mode, and a second run finds the corpus and the model by their content keys."""

from __future__ import annotations

import uuid
from pathlib import Path

import yaml

from defsentflow.storage import Catalog
from tests.training.test_pretrain import _section, _write_corpus


def _task_states(flow_run_id) -> dict[str, set[str]]:
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    states: dict[str, set[str]] = {}
    for r in runs:
        states.setdefault(r.name.rsplit("-", 1)[0], set()).add(r.state.name)
    return states


def _rows(run_id: str) -> dict[str, list]:
    """What a pretraining run leaves in the catalog, without times and paths (the model directory also
    records its training time, so its content hash is left out; the weights are compared instead)."""
    cat = Catalog()
    return {
        "runs": [tuple(r.values()) for r in cat.query("SELECT flow, status, note FROM runs WHERE run_id = ?", [run_id])],
        "stages": [tuple(r.values()) for r in cat.query(
            "SELECT stage, status, cache_key, note FROM stages WHERE run_id = ? ORDER BY stage", [run_id])],
        "models": [tuple(r.values()) for r in cat.query(
            "SELECT model_id, method, pooling, run_id, artifact_key FROM models ORDER BY model_id")],
        "artifacts": [tuple(r.values()) for r in cat.query(
            "SELECT artifact_key, kind, name, run_id FROM artifacts ORDER BY artifact_key")],  # content: times differ
    }


def test_cli_and_flow_run_the_same_sequencer(home, tmp_path, tiny_mlm_dir, monkeypatch):
    """``defsentflow pretrain`` (local mode) and the ``pretrain`` flow: the same catalog rows and the
    same weights on fresh data roots."""
    from defsentflow.cli import main
    from defsentflow.flows.pretrain import pretrain_flow

    _write_corpus(tmp_path, title=f"Animals {uuid.uuid4().hex[:8]}")
    section = _section(tmp_path, tiny_mlm_dir, dictionary=None, epochs=1).model_dump(mode="json")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"name": "x", "pretrain": section}))
    assert main(["--quiet", "pretrain", str(cfg), "--run-id", "same"]) == 0
    local = _rows("same")
    local_weights = (next((home / "models" / "pretrain").iterdir()) / "model.safetensors").read_bytes()

    other = tmp_path / "other-home"
    other.mkdir()
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(other))
    flowed = pretrain_flow(section, run_id="same")
    assert _rows("same") == local
    assert local["runs"] == [("pretrain", "completed", f"pretrained {flowed.model_id}")]
    assert local["stages"] == [("pretrain", "completed", flowed.key, flowed.model_id)]
    assert [m[0] for m in local["models"]] == [flowed.model_id]
    assert (Path(flowed.model_dir) / "model.safetensors").read_bytes() == local_weights


def test_pretrain_flow_second_run_reuses_the_model(home, tmp_path, tiny_mlm_dir, monkeypatch):
    import defsentflow.training.pretrain as pretrain
    from defsentflow.encoders import has_mlm_head
    from defsentflow.flows.pretrain import pretrain_flow

    _write_corpus(tmp_path, title=f"Animals {uuid.uuid4().hex[:8]}")
    section = _section(tmp_path, tiny_mlm_dir, dictionary=None, epochs=1).model_dump(mode="json")

    stopped = pretrain_flow(section, run_id="p0", stop_after_steps=2)
    assert not stopped.completed and stopped.steps == 2
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'p0'")[0]["status"] == "stopped"
    assert not Catalog().query("SELECT * FROM stages WHERE run_id = 'p0'")  # no model yet, no stage row
    first = pretrain_flow(section, run_id="p1")  # resumes the checkpoint
    assert first.completed and not first.cached and has_mlm_head(first.model_dir)
    assert Path(first.model_dir) == home.resolve() / "models" / "pretrain" / first.key
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'p1'")[0]["status"] == "completed"
    assert Catalog().query("SELECT method FROM models WHERE model_id = ?", [first.model_id])[0]["method"] == "pretrain"

    def forbidden(*a, **kw):
        raise AssertionError("a cached flow run must not train")

    monkeypatch.setattr(pretrain, "pretrain_mlm", forbidden)
    state = pretrain_flow(section, run_id="p2", return_state=True)
    again = state.result()
    assert again.cached and again.key == first.key and again.model_dir == first.model_dir
    assert _task_states(state.state_details.flow_run_id) == {"ingest-corpus": {"Completed"}, "pretrain-encoder": {"Completed"}}
    stages = Catalog().query("SELECT stage, status, cache_key FROM stages WHERE run_id = 'p2'")
    assert [tuple(r.values()) for r in stages] == [("pretrain", "cached", first.key)]
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'p2'")[0]["status"] == "completed"


def test_a_failed_pretrain_flow_marks_its_run_failed(home, tmp_path, tiny_mlm_dir):
    import pytest

    from defsentflow.flows.pretrain import pretrain_flow

    section = _section(tmp_path, tiny_mlm_dir, dictionary="never-ingested").model_dump(mode="json")
    with pytest.raises(KeyError):
        pretrain_flow(section, run_id="bad")
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'bad'")[0]["status"] == "failed"
