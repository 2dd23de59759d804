"""The ``evaluate`` flow under a temporary Prefect server: record, cache on re-run, report."""

from __future__ import annotations

import os

import pytest


@pytest.mark.slow
def test_evaluate_flow_records_caches_and_reports(prefect_test_harness, home, tiny_bert_dir, sts_data_dir):
    from defsentflow.flows.evaluate import evaluate_flow
    from defsentflow.storage import Catalog

    section = {"model": str(tiny_bert_dir), "model_id": "tiny", "tasks": ["sts13", "stsb-dev"],
               "data_dir": str(sts_data_dir), "pooling": "mean", "device": "cpu"}
    first = evaluate_flow(section, run_id="eval-1")
    second = evaluate_flow(section, run_id="eval-2", report=True)
    assert first["rows"] == second["rows"] and {r["task"] for r in first["rows"]} == {"sts13", "stsb-dev"}
    cat = Catalog()
    stages = {r["run_id"]: r["status"] for r in cat.query("SELECT run_id, status FROM stages WHERE stage = 'evaluate-model'")}
    assert stages == {"eval-1": "completed", "eval-2": "cached"}
    assert {r["status"] for r in cat.query("SELECT status FROM runs")} == {"completed"}
    assert cat.query("SELECT count(*) AS n FROM metrics WHERE model_id = 'tiny' AND run_id = 'eval-2'")[0]["n"] == 3
    assert os.path.isfile(second["report"]["html_path"])
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        evaluate_flow({**section, "tasks_typo": 1})


def _eval_rows(root) -> dict[str, list]:
    """What an evaluation run leaves in the catalog, without run ids and times."""
    from defsentflow.storage import Catalog

    cat = Catalog(root)
    return {
        "runs": [tuple(r.values()) for r in cat.query("SELECT flow, status, note FROM runs")],
        "stages": [tuple(r.values()) for r in cat.query("SELECT stage, status, note FROM stages")],
        "metrics": [tuple(r.values()) for r in cat.query(
            "SELECT model_id, task, setting, metric, round(value, 6), n, pooling FROM metrics ORDER BY ALL")],
    }


def test_cli_and_flow_run_the_same_sequencer(prefect_test_harness, home, tiny_bert_dir, sts_data_dir, tmp_path,
                                             monkeypatch):
    """``defsentflow eval`` and the ``evaluate`` flow: the same catalog rows on fresh data roots."""
    from defsentflow.cli import main
    from defsentflow.flows.evaluate import evaluate_flow

    assert main(["--quiet", "eval", str(tiny_bert_dir), "--tasks", "sts13", "--data-dir", str(sts_data_dir),
                 "--pooling", "mean", "--model-id", "tiny", "--device", "cpu"]) == 0
    local = _eval_rows(home)
    other = tmp_path / "other-home"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(other))
    out = evaluate_flow({"model": str(tiny_bert_dir), "model_id": "tiny", "tasks": ["sts13"],
                         "data_dir": str(sts_data_dir), "pooling": "mean", "device": "cpu"})
    assert _eval_rows(other) == local and local["runs"] == [("evaluate", "completed", f"{out['recorded']} metric rows for tiny")]
