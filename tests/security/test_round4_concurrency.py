"""Issue 44 (round 4), concurrency: bounded reads that overlap one another never keep a writer out
(N15); two commands at once on a fresh PREFECT_HOME both start (M8). Real processes; each test takes
a few seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from defsentflow.storage import Catalog, CatalogLockedError

# A reader as `defsentflow sql` and `serve` open the catalog (Catalog(reader=True)), holding each read
# for HOLD seconds (a bounded query), then opening the next one at once, until told to stop.
READER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from defsentflow.storage import Catalog
    root, hold, stop = Path(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
    cat = Catalog(root, reader=True)
    while not stop.exists():
        with cat.connect() as con:
            con.execute("SELECT count(*) FROM runs").fetchall()
            print(f"read {time.monotonic():.3f}", flush=True)
            time.sleep(hold)
""")


@pytest.fixture()
def catalog(home) -> Catalog:
    cat = Catalog(home)
    cat.start_run("pipeline", config={"name": "x"}, run_id="before")
    return cat


def _readers(root: Path, stop: Path, n: int = 2, hold: float = 1.2) -> list[subprocess.Popen]:
    """``n`` reader processes whose reads overlap: from the first read on, some read always holds the file."""
    procs = []
    for _ in range(n):
        proc = subprocess.Popen([sys.executable, "-c", READER, str(root), str(hold), str(stop)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().startswith("read "), proc.stderr.read()
        procs.append(proc)
        time.sleep(hold / n)
    return procs


def test_n15_overlapping_bounded_reads_never_keep_a_writer_out(catalog, tmp_path):
    stop = tmp_path / "stop"
    procs = _readers(catalog.root, stop)
    try:
        with pytest.raises(duckdb.IOException, match="lock"):  # the attack holds: no moment free of reads
            duckdb.connect(str(catalog.path)).close()
        writer = Catalog(catalog.root, lock_timeout=20)
        t0 = time.monotonic()
        writer.start_run("pipeline", config={"name": "x"}, run_id="during")  # was: starved, then CatalogLockedError
        waited = time.monotonic() - t0
        written = time.monotonic()
        time.sleep(1.5)  # the readers go on after the write
    finally:
        stop.touch()
        outs = [p.communicate(timeout=30) for p in procs]
    assert waited < 10, f"the writer waited {waited:.1f}s for reads of 1.2s each"
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err
        assert any(float(line.split()[1]) > written for line in out.splitlines()), out
    assert {r["run_id"] for r in writer.query("SELECT run_id FROM runs")} == {"before", "during"}


def test_n15_a_read_gives_way_to_a_waiting_writer_for_its_own_time_limit_only(catalog, tmp_path):
    """A writer that waits holds its turn; a read then waits, at most its own lock timeout, with one line."""
    from defsentflow.storage.locks import writer_turn

    with writer_turn(catalog.root, time.monotonic() + 10):
        t0 = time.monotonic()
        with pytest.raises(CatalogLockedError, match="a writer waited for the catalog"):
            Catalog(catalog.root, reader=True, lock_timeout=1).query("SELECT 1")
        assert 0.9 < time.monotonic() - t0 < 5
    assert Catalog(catalog.root, reader=True, lock_timeout=1).query("SELECT 1 AS x") == [{"x": 1}]


def test_n15_a_read_only_root_reads_without_a_lock_file(catalog, tmp_path):
    """A reader never creates the turn's lock file (a read-only data root, another user's root)."""
    lock = catalog.root / "locks" / "catalog-turn.lock"
    if lock.exists():
        lock.unlink()
    Catalog(catalog.root, reader=True).query("SELECT 1")
    assert not lock.exists()


# -- M8: two commands at once on a fresh PREFECT_HOME ------------------------------------------------------
# A stand-in for Prefect's server (two real ones cost 21-35 s here: bench/prefect_start.py runs them).
# Like Prefect's, it migrates its database under PREFECT_HOME before it answers, and a second server
# migrating the same database at the same time fails (Prefect's SQLite migration traceback, 2 of 7 trials).
STUB_SERVER = textwrap.dedent("""
    import http.server, os, sys, time
    marker = os.path.join(os.environ["PREFECT_HOME"], "migrating")
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        sys.exit(3)  # another server is migrating the same database
    time.sleep(1.0)
    os.close(fd)
    os.unlink(marker)
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
        def log_message(self, *args):
            pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
""")

# A command starting its temporary server (tasks.server.local_api) when told to go, both at once.
STARTER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import prefect.settings  # imported before the start line, so both reach it together
    import defsentflow.tasks.server as runtime
    stub, go = sys.argv[1], Path(sys.argv[2])
    runtime.server_command = lambda host, port: [sys.executable, stub, str(port)]
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.01)
    with runtime.local_api(timeout=60) as url:
        print("started", url, flush=True)
""")


def test_m8_two_commands_on_a_fresh_prefect_home_both_start_their_servers(tmp_path):
    stub, go, home = tmp_path / "server.py", tmp_path / "go", tmp_path / "prefect"
    stub.write_text(STUB_SERVER)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(home)
    procs = [subprocess.Popen([sys.executable, "-c", STARTER, str(stub), str(go)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        go.touch()
        outs = [proc.communicate(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0 and out.startswith("started http://127.0.0.1:"), err[-2000:]
    assert (home / ".server-start.lock").exists()
