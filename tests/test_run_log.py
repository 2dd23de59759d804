"""The run log: every line with time, level and flow/task name in <root>/logs/RUN_ID.log; the
terminal without API links, tracebacks only with -v."""

from __future__ import annotations

import io
import logging

import pytest

from defsentflow.run_log import elapsed, run_log
from tests.cli_output import without_root_line


@pytest.mark.parametrize("verbose", [False, True])
def test_file_keeps_everything_terminal_is_brief(tmp_path, verbose):
    logger, stream = logging.getLogger("prefect"), io.StringIO()
    terminal = logging.StreamHandler(stream)
    logger.addHandler(terminal)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        with run_log(tmp_path / "logs" / "r-1.log", verbose=verbose) as log:
            runs = logging.getLogger("prefect.task_runs")
            runs.info("Finished in state Completed()", extra={"task_run_name": "build-dictionary-22f"})
            logging.getLogger("prefect.flow_runs").info("View at http://127.0.0.1:4321/runs/flow-run/x",
                                                        extra={"flow_name": "pipeline", "flow_run_name": "quartz-terrier"})
            logging.getLogger("prefect.flow_runs").info("step done", extra={"flow_name": "pst-step",
                                                                            "flow_run_name": "pst-step-1"})
            try:
                raise ValueError("bad key 'x'\nsecond line")
            except ValueError:
                runs.exception("Task run failed", extra={"task_run_name": "pst-score-candidate-b48"})
            log.info("report:   /r/report.html")
    finally:
        logger.removeHandler(terminal)
        logger.setLevel(old_level)
    shown, kept = stream.getvalue(), (tmp_path / "logs" / "r-1.log").read_text()
    assert "View at" not in shown and "View at" not in kept  # the temporary API is gone after the run
    for text in (shown, kept):
        assert " INFO  [build-dictionary-22f] Finished in state Completed()" in text
        assert "[pst-step-1] step done" in text and "quartz-terrier" not in text
    assert ("Traceback" in shown) is verbose and "Traceback" in kept and "second line" in kept
    assert "report:   /r/report.html" in kept and "report:" not in shown  # printed by log.info, not logged twice
    assert all(line[:4].isdigit() for line in kept.splitlines() if line.startswith("20"))


@pytest.mark.parametrize("propagates", [False, True])
def test_every_line_once_whether_prefect_propagates_or_not(tmp_path, propagates):
    """Prefect's logging.yml lets ``prefect`` propagate to the root (a deployment's flow run); the
    file handler hangs on both, and still writes each record once."""
    prefect = logging.getLogger("prefect")
    old = prefect.propagate, prefect.level
    prefect.propagate = propagates
    prefect.setLevel(logging.INFO)
    try:
        with run_log(tmp_path / "r-2.log", terminal=False) as log:
            logging.getLogger("prefect.flow_runs").info("Beginning flow run", extra={"flow_name": "pipeline"})
            logging.getLogger("defsentflow.pst").info("PST step 1 (3.0 s)")
            log.info("stages:   9: 9 reused, 0 computed")
    finally:
        prefect.propagate, _ = old
        prefect.setLevel(old[1])
    lines = (tmp_path / "r-2.log").read_text().splitlines()
    assert len(lines) == 3 and len(set(lines)) == 3, lines


def test_elapsed():
    assert [elapsed(s) for s in (4.2, 185, 3725)] == ["4 s", "3 min 05 s", "1 h 02 min"]


def test_an_unknown_model_is_named_as_such_without_a_hub_call(home, capsys, monkeypatch):
    from defsentflow.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["revdict", "nosuchmodel", "a dog"]) == 2
    err = without_root_line(capsys.readouterr().err)
    assert err.startswith("defsentflow: error: unknown model 'nosuchmodel'") and len(err.splitlines()) == 1
