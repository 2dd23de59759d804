"""Every requested task gets a status: sickr falls back to trial, missing data is skipped with a reason."""

from __future__ import annotations

from pathlib import Path

from defsentflow.evaluation.task_status import record_run_tasks, runnable_tasks, task_statuses
from defsentflow.storage import Catalog

REPO = Path(__file__).resolve().parents[2]


def _without_sick_test_and_sts12(sts_data_dir: Path) -> Path:
    (sts_data_dir / "sick" / "SICK_test_annotated.txt").unlink()
    for f in (sts_data_dir / "sts" / "STS12-en-test").glob("*"):
        f.unlink()
    return sts_data_dir


def test_sickr_falls_back_to_trial_and_missing_tasks_are_skipped(sts_data_dir):
    data = _without_sick_test_and_sts12(sts_data_dir)
    got = {s.task: s for s in task_statuses(["sts12", "stsb-dev", "sickr", "revdict", "nosuch", "sickr"], data)}
    assert list(got) == ["sts12", "stsb-dev", "sickr", "revdict", "nosuch"]
    assert got["stsb-dev"].status == "evaluated" and got["revdict"].status == "evaluated"
    assert got["sickr"].status == "fallback" and got["sickr"].evaluated_as == "sickr-trial"
    assert "SICK_test_annotated.txt" in got["sickr"].reason and str(data) not in got["sickr"].reason
    assert got["sts12"].status == "skipped" and "STS.input" in got["sts12"].reason
    assert got["nosuch"].status == "skipped" and got["nosuch"].reason.startswith("unknown task")
    assert runnable_tasks(got.values()) == ["stsb-dev", "sickr", "revdict"]
    assert task_statuses(["sts12"], None)[0].status == "skipped"


def test_the_fallback_task_loads_trial(sts_data_dir):
    from defsentflow.evaluation.sts_data import load_task

    data = _without_sick_test_and_sts12(sts_data_dir)
    assert load_task(data, "sickr").name == "sickr-trial"


def test_run_tasks_rows_and_log(sts_data_dir, home, caplog):
    data = _without_sick_test_and_sts12(sts_data_dir)
    statuses = task_statuses(["sts12", "sickr", "revdict"], data)
    with caplog.at_level("INFO", logger="defsentflow.evaluation.task_status"):
        record_run_tasks("run-1", statuses)
        record_run_tasks("run-1", statuses)  # replaced, not doubled
    rows = Catalog().query("SELECT task, status, evaluated_as FROM run_tasks WHERE run_id = 'run-1' ORDER BY task")
    assert [(r["task"], r["status"], r["evaluated_as"]) for r in rows] == [
        ("revdict", "evaluated", "revdict"), ("sickr", "fallback", "sickr-trial"), ("sts12", "skipped", None)]
    assert "task sickr: fallback (SICK test file" in caplog.text and "task sts12: skipped" in caplog.text


def test_the_pipeline_plan_keeps_sickr(sts_data_dir, home):
    from defsentflow.pipeline import evaluation_plan, resolved_config, task_plan

    data = _without_sick_test_and_sts12(sts_data_dir)
    config = resolved_config(REPO / "configs" / "demo.yaml")
    config["eval"]["data_dir"] = str(data)
    config["eval"]["tasks"] = ["sts12", "stsb-dev", "sickr", "revdict"]
    plan = evaluation_plan(config, {"model_dir": "m", "model_id": "pst-x"}, None, "minilm")
    assert plan[0]["tasks"] == ["stsb-dev", "sickr", "revdict"]
    assert [s.status for s in task_plan(config)] == ["skipped", "evaluated", "fallback", "evaluated"]


def test_the_named_query_reads_one_run(sts_data_dir, home):
    from defsentflow.storage import sql_dir

    record_run_tasks("run-2", task_statuses(["sickr", "sts12"], _without_sick_test_and_sts12(sts_data_dir)))
    sql = (sql_dir() / "queries" / "run_tasks.sql").read_text()
    rows = Catalog().query(sql, {"run_id": "run-2"})
    assert [(r["task"], r["status"]) for r in rows] == [("sickr", "fallback"), ("sts12", "skipped")]
