"""Issue 36, facts 4-5: every knob bounded in one table (``defsentflow.limits``), and one line, never a
traceback, for inputs that used to end in one (deep JSON, lone surrogates, a quarantine that multiplies
a 300 KB line, a bad device, a read-only root)."""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time

import duckdb
import pytest

from defsentflow.cli import build_parser, main
from defsentflow.limits import DUCKDB_READER, FLAG_LIMITS, LIMITS
from defsentflow.storage import Catalog
from defsentflow.storage import catalog as catalog_module
from tests.cli_output import without_root_line


def _options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _options(sub)
        elif action.option_strings:
            yield action


def test_every_count_or_time_flag_is_bounded_by_the_one_table():
    numeric = {s for a in _options(build_parser()) if a.type in (int, float) for s in a.option_strings}
    assert numeric, "the walk found no numeric flag"
    assert numeric <= set(FLAG_LIMITS), f"flags without a bound in defsentflow.limits: {sorted(numeric - set(FLAG_LIMITS))}"
    assert all(limit in LIMITS for limit, _ in FLAG_LIMITS.values())


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "configs/demo.yaml", "--local-workers", "100000"], f"--local-workers must be <= {LIMITS['workers']}"),
    (["sweep", "run", "x.yaml", "--local-workers", "-1"], "--local-workers must be >= 0, got -1"),
    (["serve", "--max-wait-ms", "1e9"], f"--max-wait-ms must be <= {LIMITS['wait_ms']}"),
    (["serve", "--max-wait-ms", "nan"], "--max-wait-ms must be a finite number"),
    (["serve", "--port", "70000"], "--port must be <= 65535"),
    (["serve", "--device", "gpu"], "device 'gpu' is not a device name"),
    (["serve", "--device", "cuda:7"], "device 'cuda:7': this machine has"),
])
def test_flags_are_refused_in_one_line_before_anything_starts(home, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not any(home.iterdir())


def test_catalog_reads_are_bounded_in_memory_and_threads(home, capsys):
    Catalog().start_run("x", run_id="r1")
    row = Catalog(reader=True).query("SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t")[0]
    assert row["t"] == DUCKDB_READER["threads"] and row["m"] == f"{LIMITS['duckdb_memory_mb'] / 1024:.1f} GiB"
    assert main(["sql", "SELECT current_setting('threads') AS t"]) == 0
    assert capsys.readouterr().out.split()[-1] == str(DUCKDB_READER["threads"])
    assert main(["sql", "SET threads = 64"]) == 2  # the sql door cannot raise them


def test_serve_connections_are_bounded(monkeypatch):
    """3,000 slow clients held 3,000 connections: a request head must now arrive in time."""
    import uvicorn

    from defsentflow.serve.server import HeaderTimeoutProtocol, server_config

    monkeypatch.setattr(HeaderTimeoutProtocol, "header_timeout", 0.4)

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    config = server_config(app, "127.0.0.1", 0, lifespan="off")
    assert (config.timeout_keep_alive, config.limit_concurrency) == (LIMITS["keep_alive_s"], LIMITS["connections"])
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]

        def closed_after(payload: bytes) -> float:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(payload)
                t0 = time.monotonic()
                assert s.recv(100) == b""  # closed without an answer
                return time.monotonic() - t0

        assert closed_after(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ") < 3  # a head that never ends
        assert closed_after(b"") < 3  # a connection that never speaks
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(10)


def test_hostile_dictionary_lines_are_quarantined_with_file_and_line(home, tmp_path, capsys, monkeypatch):
    import defsentflow.dictionary.stream_merge as stream_merge

    monkeypatch.setitem(LIMITS, "quarantine_chars", 50_000)
    src = tmp_path / "d.jsonl"
    lines = [{"entry": "cat", "definition": "a small animal"}, {"entry": "dog", "definition": "bad \ud800 text"}]
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n" + "[" * 50_000 + "]" * 50_000 + "\n")
    wik = tmp_path / "w.jsonl"  # one 30 KB line whose 2,000 senses are each quarantined with the line
    wik.write_text(json.dumps({"word": "x", "lang_code": "en", "senses": [1] * 2000, "pad": "p" * 24_000}) + "\n"
                   + json.dumps({"word": "cat", "lang_code": "en", "senses": [{"glosses": ["an animal"]}]}) + "\n")
    assert main(["ingest", "dictionary", "--source", "jsonl", str(src), "--name", "d"]) == 0
    assert main(["ingest", "dictionary", "--source", "wiktextract", str(wik), "--name", "w"]) == 0
    capsys.readouterr()
    rows = Catalog(reader=True).query("SELECT dataset, line, detail, length(raw) AS n FROM quarantine ORDER BY ALL")
    d = [(r["line"], r["detail"]) for r in rows if r["dataset"] == "d"]
    assert d[0][0] == 2 and "lone surrogate U+D800" in d[0][1]
    assert d[1][0] == 3 and "nested deeper than" in d[1][1]
    w = [r for r in rows if r["dataset"] == "w"]
    assert len(w) == 2000 and sum(r["n"] for r in w) <= 50_000 < len(w) * min(stream_merge.RAW_LIMIT, 30_000)
    assert "raw text not kept" in w[-1]["detail"]


def test_a_read_only_root_is_one_line_for_every_writing_command(home, capsys, monkeypatch):
    """As root, chmod does not bind: the read-only mount is simulated where DuckDB reports it (a real
    read-only bind mount was probed by hand, see docs/security.md)."""
    cat = Catalog()
    cat.start_run("pipeline", run_id="r1")
    cat.end_run("r1", "completed", flow="pipeline")
    real = duckdb.connect

    def read_only_mount(path, read_only=False, config=None):
        if not read_only and str(path).endswith("catalog.duckdb"):
            raise duckdb.IOException(f'IO Error: Cannot open file "{path}": Read-only file system')
        return real(path, read_only=read_only, config=config or {})

    monkeypatch.setattr(catalog_module.duckdb, "connect", read_only_mount)
    Catalog._ddl_applied.clear()
    for argv in (["catalog", "rebuild"], ["report", "r1"]):
        assert main(argv) == 2
        err = without_root_line(capsys.readouterr().err)
        assert "the data root is read-only" in err and err.count("\n") == 1, err
    assert main(["leaderboard"]) == 0  # reading still works


def test_a_bad_device_is_said_even_when_the_port_is_busy(home, capsys):
    """``serve --device cuda:7`` named the busy port 8000 instead (CI, 2026-11-28): flags come first."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--device", "cuda:7", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert "device 'cuda:7': this machine has" in err and str(port) not in err and err.count("\n") == 1, err
