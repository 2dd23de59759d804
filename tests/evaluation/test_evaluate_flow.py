"""The ``evaluate`` flow under a temporary Prefect server: record, cache on re-run, report."""

from __future__ import annotations

import os
import tempfile

import pytest

# Before Prefect is imported: a throw-away Prefect home and result store (as tests/flows does).
_PREFECT_TMP = tempfile.mkdtemp(prefix="defsentflow-prefect-eval-")
os.environ.setdefault("PREFECT_HOME", os.path.join(_PREFECT_TMP, "home"))
os.environ.setdefault("PREFECT_LOCAL_STORAGE_PATH", os.path.join(_PREFECT_TMP, "results"))
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=None):
        yield


@pytest.mark.slow
def test_evaluate_flow_records_caches_and_reports(harness, home, tiny_bert_dir, sts_data_dir):
    from flows.evaluate import evaluate_flow

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
