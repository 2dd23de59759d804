"""One run lifecycle: recorded_run closes every way a body ends; a dead process's run is interrupted."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from defsentflow.cli import main
from defsentflow.storage import Catalog
from defsentflow.storage.runs import failure_reason, mark_interrupted_runs, recorded_run, shown


def _run(cat: Catalog, run_id: str) -> dict:
    return cat.query("SELECT * FROM runs WHERE run_id = ?", [run_id])[0]


def test_recorded_run_closes_completed_failed_and_interrupted(home):
    cat = Catalog()
    with recorded_run(cat, "x", "ok") as run:
        assert _run(cat, "ok")["status"] == "running"
        run.note = "3 rows"
    assert (_run(cat, "ok")["status"], _run(cat, "ok")["note"]) == ("completed", "3 rows")

    with pytest.raises(ValueError), recorded_run(cat, "x", "bad"):
        raise ValueError("config.yaml: line 3\n  base_model: unknown model 'minilm-l12'")
    row = _run(cat, "bad")
    assert row["status"] == "failed"
    assert row["note"] == "ValueError: config.yaml: line 3 base_model: unknown model 'minilm-l12'"  # one line

    with pytest.raises(KeyboardInterrupt), recorded_run(cat, "x", "stop"):
        raise KeyboardInterrupt
    assert (_run(cat, "stop")["status"], _run(cat, "stop")["note"]) == ("interrupted", "interrupted (KeyboardInterrupt)")

    with recorded_run(cat, "x", "early") as run:
        run.status = "stopped"
    assert _run(cat, "early")["status"] == "stopped"

    with recorded_run(cat, "x", None) as run:  # no run id: nothing written
        run.note = "ignored"
    assert [r["run_id"] for r in cat.query("SELECT run_id FROM runs ORDER BY run_id")] == ["bad", "early", "ok", "stop"]


def test_a_stage_flow_never_closes_the_pipeline_run_it_shares(home):
    cat = Catalog()
    with recorded_run(cat, "pipeline", "p1"):
        with recorded_run(cat, "pst", "p1"):
            pass
        assert _run(cat, "p1")["status"] == "running"  # the pipeline closes its own row
    assert _run(cat, "p1")["status"] == "completed"


def test_failure_reason_is_one_bounded_line():
    assert failure_reason(RuntimeError("a\nb\tc")) == "RuntimeError: a b c"
    assert len(failure_reason(RuntimeError("x" * 5000))) == 300
    assert failure_reason(SystemExit(128 + signal.SIGTERM)) == "interrupted (SIGTERM)"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_run_whose_process_is_gone_is_interrupted_in_every_listing(home, capsys):
    cat = Catalog()
    with pytest.raises(RuntimeError), recorded_run(cat, "evaluate", "broke"):
        raise RuntimeError("CUDA out of memory")
    cat.start_run("evaluate", run_id="killed")
    cat.execute("UPDATE runs SET pid = ? WHERE run_id = 'killed'", [_dead_pid()])
    cat.start_run("evaluate", run_id="elsewhere")  # another host's run: nothing here can tell
    cat.execute("UPDATE runs SET pid = ?, host = 'another-host' WHERE run_id = 'elsewhere'", [_dead_pid()])
    cat.start_run("evaluate", run_id="alive")  # this process

    # a reader (serve) shows it without writing
    listed = {r["run_id"]: shown(r) for r in Catalog(reader=True).query("SELECT * FROM runs")}
    assert listed["killed"]["status"] == "interrupted" and "is gone" in listed["killed"]["reason"]
    assert _run(cat, "killed")["status"] == "running"
    assert listed["broke"]["reason"] == "RuntimeError: CUDA out of memory"
    assert listed["alive"]["status"] == "running" and listed["alive"]["reason"] is None

    # the web app's /runs (a reader too): the status and the one-line reason
    from defsentflow.serve.catalog import ServeCatalog

    served = {r["run_id"]: r for r in ServeCatalog().runs()}
    assert served["killed"]["status"] == "interrupted" and served["broke"]["reason"] == "RuntimeError: CUDA out of memory"
    assert served["alive"]["reason"] is None and "note" not in served["alive"]  # no owner details on the page

    # `sql` never writes: it shows the row as it is until a run starts or `runs` lists it
    assert main(["sql", "SELECT status FROM runs WHERE run_id = 'killed'"]) == 0
    assert capsys.readouterr().out.split()[-1] == "running"
    # the CLI's listing closes it, so SQL shows it too
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert "interrupted" in out and "RuntimeError: CUDA out of memory" in out
    assert main(["sql", "SELECT run_id, status FROM runs ORDER BY run_id"]) == 0
    out = capsys.readouterr().out
    statuses = dict(line.split()[:2] for line in out.splitlines()[2:])
    assert statuses == {"alive": "running", "broke": "failed", "elsewhere": "running", "killed": "interrupted"}
    assert mark_interrupted_runs(cat) == []  # closed once
    cat.start_run("evaluate", run_id="killed-too")
    cat.execute("UPDATE runs SET pid = ? WHERE run_id = 'killed-too'", [_dead_pid()])
    with recorded_run(cat, "evaluate", "next"):  # the next run to start closes it
        assert _run(cat, "killed-too")["status"] == "interrupted"


def test_sigterm_closes_the_recorded_run_as_interrupted(home):
    """What `timeout` does to a command: SIGTERM. The CLI's handler unwinds, so the row is closed."""
    script = textwrap.dedent("""
        import signal, time
        from defsentflow.cli import exit_on_sigterm
        from defsentflow.storage import Catalog
        signal.signal(signal.SIGTERM, exit_on_sigterm)
        with Catalog().recorded_run("evaluate", "term"):
            print("ready", flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    row = _run(Catalog(), "term")
    assert (row["status"], row["note"]) == ("interrupted", "interrupted (SIGTERM)")
