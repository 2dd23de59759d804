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
