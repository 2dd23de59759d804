"""The ``pretrain`` flow: same model as the library, and a second run is a cache hit for its stage tasks."""

from __future__ import annotations

import uuid
from pathlib import Path

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


def test_pretrain_flow_second_run_is_cached(prefect_test_harness, home, tmp_path, tiny_mlm_dir, monkeypatch):
    import defsentflow.training.pretrain as pretrain
    from defsentflow.encoders import has_mlm_head
    from flows.pretrain import pretrain_flow

    # Unique content: no persisted Prefect result from another test can match these cache keys.
    _write_corpus(tmp_path, title=f"Animals {uuid.uuid4().hex[:8]}")
    section = _section(tmp_path, tiny_mlm_dir, dictionary=None, epochs=1).model_dump(mode="json")

    first = pretrain_flow(section, run_id="p1")
    assert first.completed and not first.cached and has_mlm_head(first.model_dir)
    assert Path(first.model_dir) == home.resolve() / "models" / "pretrain" / first.key
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'p1'")[0]["status"] == "completed"
    assert Catalog().query("SELECT method FROM models WHERE model_id = ?", [first.model_id])[0]["method"] == "pretrain"

    def forbidden(*a, **kw):
        raise AssertionError("a cached flow run must not train")

    monkeypatch.setattr(pretrain, "pretrain_mlm", forbidden)
    state = pretrain_flow(section, run_id="p2", return_state=True)
    again = state.result()
    assert again.key == first.key and again.model_dir == first.model_dir
    states = _task_states(state.state_details.flow_run_id)
    assert states["ingest-corpus"] == {"Cached"} and states["pretrain-encoder"] == {"Cached"}, states
