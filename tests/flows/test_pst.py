"""The ``pst`` and ``train-defsent`` flows run the library's sequencers: the same catalog rows as the
CLI's local mode, and a second run reuses every piece by its content key."""

from __future__ import annotations

import uuid

from defsentflow.storage import Catalog
from defsentflow.training.pst import PstSteps
from tests.dictionary_tables import register_table
from tests.training.test_pst_schedule import section, toy_dictionary

SCORED = PstSteps()  # PST scores each candidate by the evaluation's figure path itself


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


def _rows(run_id: str) -> dict[str, list]:
    """What a PST run leaves in the catalog, without ids and times."""
    cat = Catalog()
    return {
        "pst_steps": [tuple(r.values()) for r in cat.query(
            "SELECT step, seed, model_id, selection_metric, round(selection_score, 6), chosen, lr, pooling, "
            "entry_encoding FROM pst_steps WHERE run_id = ? ORDER BY step, seed", [run_id])],
        "pst_runs": [tuple(r.values()) for r in cat.query(
            "SELECT steps_run, winner_step, winner_model_id, selection_metric, round(selection_score, 6), reason "
            "FROM pst_runs WHERE run_id = ?", [run_id])],
        "stages": [tuple(r.values()) for r in cat.query(
            "SELECT stage, status, cache_key FROM stages WHERE run_id = ? ORDER BY stage", [run_id])],
        "runs": [tuple(r.values()) for r in cat.query("SELECT flow, status FROM runs WHERE run_id = ?", [run_id])],
    }


def test_cli_and_flow_run_the_same_sequencer(prefect_test_harness, tiny_bert_dir, home, tmp_path, monkeypatch):
    """The CLI's local mode and the Prefect flow run one code path: the same catalog rows on fresh data roots."""
    import defsentflow.dictionary.tables as revdict
    from defsentflow.flows.pst import pst_flow
    from defsentflow.training.pst import run_pst

    table = toy_dictionary(marker=f" {uuid.uuid4().hex[:6]}")
    real = revdict.load_dictionary_table
    monkeypatch.setattr(revdict, "load_dictionary_table", lambda d, **kw: table if d == "toy" else real(d, **kw))
    register_table("toy", table)
    sec = section(tiny_bert_dir, steps=2, seeds=[0, 1])
    local = run_pst(sec, run_id="same", steps=SCORED)
    local_rows = _rows("same")
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(tmp_path / "other-home"))
    (tmp_path / "other-home").mkdir()
    register_table("toy", table)
    flowed = pst_flow(sec.model_dump(mode="json"), run_id="same")
    assert _rows("same") == local_rows
    assert local_rows["pst_steps"] and [r[0] for r in local_rows["stages"]] == ["pst-step-0", "pst-step-1", "pst-step-2"]
    assert local_rows["runs"] == [("pst", "completed")]
    assert flowed.winner.model_id == local.winner.model_id and flowed.reason == local.reason


def test_pst_flow_second_run_reuses_every_step(prefect_test_harness, tiny_bert_dir, home, monkeypatch):
    import defsentflow.dictionary.tables as revdict
    import defsentflow.training.loop as loop
    from defsentflow.flows.pst import pst_flow

    table = toy_dictionary(marker=f" {uuid.uuid4().hex[:6]}")
    real = revdict.load_dictionary_table
    monkeypatch.setattr(revdict, "load_dictionary_table", lambda d, **kw: table if d == "toy" else real(d, **kw))
    register_table("toy", table)
    cfg = section(tiny_bert_dir, steps=2, seeds=[0, 1]).model_dump(mode="json")

    state = pst_flow(cfg, run_id="f1", return_state=True)
    first = state.result()
    assert [s.step for s in first.steps] == [0, 1, 2]
    rows = Catalog().query("SELECT step, count(*) AS n FROM pst_steps WHERE run_id = 'f1' GROUP BY step ORDER BY step")
    assert [(r["step"], r["n"]) for r in rows] == [(0, 1), (1, 2), (2, 2)]
    states = _task_states(state.state_details.flow_run_id)
    assert {"pst-step", "pst-entry-matrix", "pst-candidate"} <= set(states)

    def forbidden(*a, **kw):
        raise AssertionError("a cached flow run must not train")

    monkeypatch.setattr(loop, "train_encoder", forbidden)
    monkeypatch.setattr("defsentflow.training.entry_shards.build_entry_matrix_sharded", forbidden)
    again = pst_flow(cfg, run_id="f2")
    assert again.winner.model_dir == first.winner.model_dir and again.reason == first.reason
    stages = Catalog().query("SELECT stage, status FROM stages WHERE run_id = 'f2' ORDER BY stage")
    assert [(r["stage"], r["status"]) for r in stages] == [("pst-step-0", "cached"), ("pst-step-1", "cached"),
                                                           ("pst-step-2", "cached")]  # step 0's scores found too
    assert Catalog().query("SELECT winner_step FROM pst_runs WHERE run_id = 'f2'")[0]["winner_step"] == first.winner.step


def test_train_defsent_flow_is_cached(prefect_test_harness, tiny_mlm_dir, home, monkeypatch):
    import defsentflow.dictionary.tables as revdict
    import defsentflow.training.loop as loop
    from defsentflow.flows.train_defsent import train_defsent_flow

    table = toy_dictionary(marker=f" {uuid.uuid4().hex[:6]}")
    real = revdict.load_dictionary_table
    monkeypatch.setattr(revdict, "load_dictionary_table", lambda d, **kw: table if d == "toy" else real(d, **kw))
    register_table("toy", table)
    cfg = {"base_model": str(tiny_mlm_dir), "dictionary": "toy", "method": "defsent", "pooling": "mean",
           "max_length": 32, "device": "cpu"}
    first = train_defsent_flow(cfg, run_id="d1")
    assert first.method == "defsent" and first.n_definitions > 0

    def forbidden(*a, **kw):
        raise AssertionError("a cached flow run must not train")

    monkeypatch.setattr(loop, "train_encoder", forbidden)
    state = train_defsent_flow(cfg, run_id="d2", return_state=True)
    assert state.result().model_dir == first.model_dir
    assert _task_states(state.state_details.flow_run_id)["train-defsent"] == {"Completed"}  # reused by its key
    assert Catalog().query("SELECT status FROM runs WHERE run_id = 'd2'")[0]["status"] == "completed"
    stage = Catalog().query("SELECT cache_key, note FROM stages WHERE run_id = 'd2' AND stage = 'train-defsent'")
    assert stage and stage[0]["note"] == first.model_id
