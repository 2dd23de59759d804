from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest

from defsentflow.storage import Catalog, CatalogLockedError, hash_path
from defsentflow.storage.locks import LOCK_NOTICE_S, lock_wait_message


def test_schema_applied_and_artifact_roundtrip(home, tmp_path):
    cat = Catalog()
    f = tmp_path / "a.txt"
    f.write_text("hello")
    cat.register_artifact("k1", "test", f, hash_path(f), name="a", input_hashes={"src": "h"}, config={"x": 1})
    art = cat.artifact("k1")
    assert art["content_hash"] == hash_path(f) and art["config"] == {"x": 1}
    f.unlink()
    assert cat.artifact("k1") is None  # registered but files gone: not complete


def test_metrics_replace_and_bind_parameters(home):
    cat = Catalog()
    cat.record_metrics("m'; DROP TABLE metrics; --", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 1.0}])
    cat.record_metrics("m'; DROP TABLE metrics; --", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 2.0}])
    rows = cat.query("SELECT model_id, value FROM metrics")
    assert rows == [{"model_id": "m'; DROP TABLE metrics; --", "value": 2.0}]


def test_writer_waits_for_a_read_only_connection_and_says_so(home, caplog):
    """A `duckdb -readonly` shell on the catalog: a writer waits, says so after LOCK_NOTICE_S (what, how
    long, what to do) and goes on when the shell lets go."""
    cat = Catalog()
    cat.start_run("x", run_id="r0")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, time, sys\n"
        f"con = duckdb.connect({str(cat.path)!r}, read_only=True)\n"
        "print('locked', flush=True)\n"
        "time.sleep(2.5)\n"
        "con.close()\n"
    )], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    said: list[float] = []
    t0 = time.monotonic()

    class Clock(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(time.monotonic() - t0)

    clock = Clock(logging.WARNING)
    logging.getLogger("defsentflow.storage.locks").addHandler(clock)
    try:
        with caplog.at_level(logging.WARNING, logger="defsentflow.storage.locks"):
            cat.start_run("x", run_id="r1")  # retries with backoff until the holder lets go
    finally:
        logging.getLogger("defsentflow.storage.locks").removeHandler(clock)
    assert time.monotonic() - t0 > 1.0
    holder.wait()
    waiting, free = [r.getMessage() for r in caplog.records]
    assert waiting == lock_wait_message(cat.path, 120)
    assert "another process has it open" in waiting and "up to 120 s" in waiting and "duckdb" in waiting \
        and "defsentflow sql" in waiting
    assert LOCK_NOTICE_S <= said[0] < 2.0 and free.startswith(f"catalog {cat.path}: free again after")
    assert {r["run_id"] for r in cat.query("SELECT run_id FROM runs")} == {"r0", "r1"}


def test_lock_timeout_is_a_clear_error(home):
    cat = Catalog()
    cat.start_run("x")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, time\n"
        f"con = duckdb.connect({str(cat.path)!r})\n"
        "print('locked', flush=True)\n"
        "time.sleep(5)\n"
    )], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(CatalogLockedError, match="locked by another process for 0.5 s: .* holds it .close the program"):
            Catalog(lock_timeout=0.5).start_run("y")
    finally:
        holder.kill()
        holder.wait()


def test_catalog_opens_in_the_duckdb_shell(home):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shell = shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")
    if not Path(shell).exists():
        pytest.skip("the duckdb shell (extra 'cli') is not installed")
    cat = Catalog()
    cat.start_run("x", run_id="from-python")
    out = subprocess.run([shell, str(cat.path), "-csv", "-c", "SELECT run_id FROM runs"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "from-python" in out.stdout
