"""A command started while a `duckdb -readonly` shell holds the catalog says so at once (on stderr,
after its data-root line) and goes on when the shell lets go."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from defsentflow.storage import Catalog

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("what", ["ingest", "run"])
def test_a_command_waiting_for_a_read_only_shell_says_what_how_long_and_what_to_do(home, tmp_path, what):
    Catalog().start_run("x", run_id="r0")  # a catalog to hold
    catalog = home / "catalog.duckdb"
    shell = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys\n"
        f"con = duckdb.connect({str(catalog)!r}, read_only=True)\n"  # what `duckdb -readonly` opens
        "print('open', flush=True)\n"
        "sys.stdin.readline()\n"
        "con.close()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    words = tmp_path / "w.tsv"
    words.write_text("cat\ta small animal\n")
    command = None
    try:
        assert shell.stdout.readline().strip() == "open"
        t0 = time.monotonic()
        argv = (["ingest", "dictionary", "--source", "tsv", str(words), "--name", "w"] if what == "ingest" else
                ["run", str(REPO / "configs" / "demo.yaml")])  # the run is stopped once it has said so
        command = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "--quiet", *argv],
                                   env={**os.environ, "DEFSENTFLOW_HOME": str(home)}, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(line) for line in command.stderr], daemon=True)
        reader.start()
        said: list[str] = []
        while not any("waiting for the catalog" in line for line in said):
            said.append(lines.get(timeout=max(0.1, 15 - (time.monotonic() - t0))))  # queue.Empty: not said in 15 s
        waited = time.monotonic() - t0
        assert said[0] == f"data root: {home.resolve()} (--home / $DEFSENTFLOW_HOME)\n", said  # first, on stderr
        assert f"waiting for the catalog {catalog}: another process has it open" in said[-1], said
        assert "waiting up to 120 s" in said[-1] and "duckdb" in said[-1] and "defsentflow sql" in said[-1]
        assert command.poll() is None  # still waiting, not failed
        if what == "run":  # it said so before starting Prefect; stopped here
            return
        shell.stdin.write("\n")
        shell.stdin.flush()
        assert command.wait(timeout=60) == 0
        out = command.stdout.read()
        reader.join(timeout=10)
        rest = "".join(lines.queue)
        assert "free again after" in rest and "dataset w: built" in out, (out, rest)
        print(f"the wait was said {waited:.1f} s after the command started")
    finally:
        for p in (command, shell):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_a_wait_past_the_lock_limit_is_one_error_line_naming_the_holder(home):
    """`defsentflow --lock-timeout 1 run demo` while a real read-only DuckDB connection holds the catalog:
    rc 2 and one `defsentflow: error:` line naming the holding process, no traceback (in process: the
    subject is the wait and its message, not the process boundary, which the test above crosses)."""
    from tests.integration.tiny_pipeline_utils import cli_here

    Catalog().start_run("x", run_id="r0")
    shell = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys\n"
        f"con = duckdb.connect({str(home / 'catalog.duckdb')!r}, read_only=True)\n"
        "print('open', flush=True)\n"
        "sys.stdin.readline()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert shell.stdout.readline().strip() == "open"
        t0 = time.monotonic()
        res = cli_here(["--lock-timeout", "1", "run", str(REPO / "configs" / "demo.yaml")], home)
        took = time.monotonic() - t0
    finally:
        shell.kill()
        shell.wait()
    errors = [line for line in res.stderr.splitlines() if line.startswith("defsentflow: error:")]
    assert res.returncode == 2 and len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"for 1 s: PID {shell.pid} (" in errors[0] and "holds it" in errors[0] and "--lock-timeout" in errors[0], errors
    assert took < 30, took


def test_the_summary_says_the_command_s_time_and_the_wait(home):
    """The closing block's time is the command's wall time with the catalog wait named; a run that ran no
    stage prints no empty stage line."""
    from defsentflow.run_summary import summary_lines

    Catalog().start_run("pipeline", run_id="demo-1")
    lines = summary_lines({"run_id": "demo-1", "status": "unchanged"}, seconds=83, waited=47, log_path=home / "x.log")
    assert "run:      demo-1 (unchanged) in 1 min 23 s (47 s of it waiting for the catalog)" in lines
    assert not any(line.startswith("stages:") for line in lines) and "\n\n\n" not in "\n".join(lines), lines
