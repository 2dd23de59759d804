"""The ``pst`` flow: same result as the library, and a second run is a cache hit for every stage task."""

from __future__ import annotations

import uuid

from defsentflow.storage import Catalog
from tests.training.test_pst_schedule import section, toy_dictionary

_STAGE_TASKS = ("pst-score-untrained", "pst-entry-matrix", "pst-train-candidate", "pst-score-candidate")


def _task_states(flow_run_id) -> dict[str, set[str]]:
    """Task name prefix -> states, over the flow run and its subflow runs."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId

    with get_client(sync_client=True) as client:
        subs = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))
        ids = [flow_run_id] + [r.id for r in subs]
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))
    states: dict[str, set[str]] = {}
    for r in runs:
        name = r.name.rsplit("-", 1)[0]
        states.setdefault(name, set()).add(r.state.name)
    return states


def test_pst_flow_second_run_is_fully_cached(prefect_test_harness, tiny_bert_dir, home, monkeypatch):
    import defsentflow.evaluation.revdict as revdict
    import defsentflow.training.loop as loop
    from flows.pst import pst_flow

    # Unique content: no persisted Prefect result from another test can match these cache keys.
    table = toy_dictionary(marker=f" {uuid.uuid4().hex[:6]}")
    real = revdict.load_dictionary_table
    monkeypatch.setattr(revdict, "load_dictionary_table", lambda d, **kw: table if d == "toy" else real(d, **kw))
    cfg = section(tiny_bert_dir, steps=2, seeds=[0, 1]).model_dump(mode="json")

    first = pst_flow(cfg, run_id="f1")
    assert [s.step for s in first.steps] == [0, 1, 2]
    rows = Catalog().query("SELECT step, count(*) AS n FROM pst_steps WHERE run_id = 'f1' GROUP BY step ORDER BY step")
    assert [(r["step"], r["n"]) for r in rows] == [(0, 1), (1, 2), (2, 2)]

    def forbidden(*a, **kw):
        raise AssertionError("a cached flow run must not train")

    monkeypatch.setattr(loop, "train_encoder", forbidden)
    state = pst_flow(cfg, run_id="f2", return_state=True)
    again = state.result()
    assert again.winner.model_dir == first.winner.model_dir and again.reason == first.reason
    states = _task_states(state.state_details.flow_run_id)
    for name in _STAGE_TASKS:
        assert states.get(name) == {"Cached"}, (name, states)
    assert Catalog().query("SELECT winner_step FROM pst_runs WHERE run_id = 'f2'")[0]["winner_step"] == first.winner.step


def test_train_defsent_flow_is_cached(prefect_test_harness, tiny_mlm_dir, home, monkeypatch):
    import defsentflow.evaluation.revdict as revdict
    import defsentflow.training.loop as loop

    from flows.train_defsent import train_defsent_flow

    table = toy_dictionary(marker=f" {uuid.uuid4().hex[:6]}")
    real = revdict.load_dictionary_table
    monkeypatch.setattr(revdict, "load_dictionary_table", lambda d, **kw: table if d == "toy" else real(d, **kw))
    cfg = {"base_model": str(tiny_mlm_dir), "dictionary": "toy", "method": "defsent", "pooling": "mean",
           "max_length": 32, "device": "cpu"}
    first = train_defsent_flow(cfg, run_id="d1")
    assert first.method == "defsent" and first.n_definitions > 0

    def forbidden(*a, **kw):
        raise AssertionError("a cached flow run must not train")

    monkeypatch.setattr(loop, "train_encoder", forbidden)
    state = train_defsent_flow(cfg, run_id="d2", return_state=True)
    assert state.result().model_dir == first.model_dir
    assert _task_states(state.state_details.flow_run_id)["train-defsent"] == {"Cached"}
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'd2'")[0]["status"] == "completed"
