"""Issue 44 (round 4), what a user hands the commands: every bad ``--set``, device, ratio, address, output
folder and config name is one line before anything starts; the packaged demo is read from the package;
``serve`` says the port it got and closes connections whose body never arrives."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml

from defsentflow.cli import main
from defsentflow.storage.outputs import OutputRefusedError, output_dir
from tests.cli_output import without_root_line


@pytest.fixture()
def config(tmp_path) -> Path:
    """A small pipeline config whose files exist (nothing here runs it: every attack ends before)."""
    (tmp_path / "d.jsonl").write_text(json.dumps({"entry": "cat", "definition": "a small animal"}) + "\n")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "dictionary": {"name": "d", "sources": [
        {"kind": "jsonl", "paths": [str(tmp_path / "d.jsonl")]}]}, "pst": {"base_model": "minilm", "dictionary": "d"}}))
    return path


def _one_line(capsys) -> str:
    err = [line for line in without_root_line(capsys.readouterr().err).splitlines() if line.strip()]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


@pytest.mark.parametrize(("value", "message"), [
    ("pst.lr=[unclosed", "the value is not valid YAML"),                        # N36
    ("pst.lr={a: 1, a: 2}", "duplicate key 'a'"),
    ("pst.lr=!!python/object/apply:os.system [id]", "could not determine a constructor"),
    ("pst.lr=&a [*a]", "refers to a value that holds it"),
    ("pst.lr=" + "[" * 5000, "nested deeper than 64 levels"),
    (".".join(["a"] * 1000) + "=1", "not a dotted key of at most 64 parts"),    # N37
    ("pst.lr=.inf", "holds NaN or infinity"),                                    # N39
    ("pst.lr=.nan", "holds NaN or infinity"),
    ("dictionary.ratios=[.nan, 1, 1]", "holds NaN or infinity"),                 # N41
    ("dictionary.ratios=[1e308, 1e308, 1]", "ratios must be three finite"),
    ("pst.device=cuda:7", "pst.device: device 'cuda:7': this machine has"),     # N35
    ("pst.device=gpu", "device 'gpu' is not a device name"),
    ("name=" + "a" * 125, "name: String should have at most 119 characters"),   # M9
])
def test_every_bad_set_is_one_line_before_anything_starts(home, config, capsys, value, message):
    assert main(["run", str(config), "--set", value]) == 2
    assert message in _one_line(capsys)
    assert not (home / "catalog.duckdb").exists()  # nothing started, nothing recorded


def test_n41_nan_ratios_in_a_config_file_are_refused(config, tmp_path):
    from defsentflow.config import load_config

    data = yaml.safe_load(config.read_text())
    for ratios in ("[.nan, 1, 1]", "[1e308, 1e308, 1]"):
        config.write_text(yaml.safe_dump(data).replace("name: d\n", f"name: d\n  ratios: {ratios}\n", 1))
        with pytest.raises(ValueError, match="ratios must be three finite"):
            load_config(config)


def test_n35_a_bad_device_is_refused_at_start_on_a_cached_root_too(home, config, capsys):
    from defsentflow.storage import Catalog

    with Catalog().connect():  # a root with a catalog (a cached run's): the check does not depend on it
        pass
    data = yaml.safe_load(config.read_text())
    data["eval"] = {"device": "cuda:3"}
    config.write_text(yaml.safe_dump(data))
    assert main(["run", str(config)]) == 2
    assert "eval.device: device 'cuda:3'" in _one_line(capsys)


@pytest.mark.parametrize("address", ["tcp://host", "http://x:1", "tcp://a:99999", "not an address"])
def test_n45_a_malformed_dask_address_is_refused_by_the_parser(config, capsys, address):
    with pytest.raises(SystemExit) as exc:
        main(["run", str(config), "--dask-address", address])
    assert exc.value.code == 2
    assert "is not a Dask scheduler address: expected tcp://HOST:PORT" in capsys.readouterr().err


def test_n43_the_packaged_demo_is_read_from_the_package_not_the_current_directory(tmp_path, monkeypatch):
    from defsentflow.config_tools import resolve_config
    from defsentflow.pipeline import resolved_config
    from defsentflow.storage.paths import sample_dir

    planted = tmp_path / "defsentflow" / "sample" / "dictionary"
    planted.mkdir(parents=True)
    (planted / "oewn-sample.jsonl").write_text('{"entry": "evil", "definition": "planted"}\n')
    monkeypatch.chdir(tmp_path)
    paths = [p for s in resolved_config(resolve_config("demo"))["dictionary"]["sources"] for p in s["paths"]]
    assert paths and all(Path(p).is_relative_to(sample_dir().resolve()) for p in paths), paths


def test_n47_a_folder_holding_a_link_or_empty_folders_is_not_empty(tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.txt").write_text("years of work")
    out = tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(target)
    (out / "empty" / "deeper").mkdir(parents=True)
    with pytest.raises(OutputRefusedError, match="not empty"), output_dir(out, command="report"):
        pass
    assert (target / "thesis.txt").read_text() == "years of work" and (out / "link").is_symlink()
    (out / "link").unlink()
    with pytest.raises(OutputRefusedError, match="not empty"), output_dir(out, command="report"):
        pass  # empty folders only: still not "nothing"
    assert (out / "empty" / "deeper").is_dir()


def test_m4_an_output_under_a_file_is_one_line(home, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OutputRefusedError, match="afile is a file, not a folder"), \
            output_dir(tmp_path / "afile" / "sub", command="report"):
        pass


def test_m14_leaderboard_without_a_catalog_exits_2(home, capsys):
    assert main(["leaderboard"]) == 2
    assert _one_line(capsys).startswith("defsentflow: error: no catalog at")


def test_n31_serve_says_the_port_it_got_and_a_busy_port_is_one_error():
    from defsentflow.serve.server import PortInUseError, listen

    sock = listen("127.0.0.1", 0)  # --port 0: the port the system chose is the one printed
    try:
        port = sock.getsockname()[1]
        assert 0 < port < 65536
        with pytest.raises(PortInUseError, match=f"port {port} on 127.0.0.1 is in use .*--port"):
            listen("127.0.0.1", port)
    finally:
        sock.close()


def test_m11_the_api_page_loads_nothing_from_elsewhere(home):
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    with TestClient(create_app(home)) as client:
        page = client.get("/api/docs")
        assert page.status_code == 200 and "/api/revdict" in page.text
        assert "<script" not in page.text.lower() and "http" not in page.text.lower().replace("http-equiv", "")
        assert client.get("/openapi.json").status_code == 200


def test_n26_a_request_body_that_never_arrives_is_closed(monkeypatch):
    import uvicorn

    from defsentflow.serve.server import HeaderTimeoutProtocol, server_config

    monkeypatch.setattr(HeaderTimeoutProtocol, "header_timeout", 0.4)

    async def app(scope, receive, send):
        more = True
        while more:  # an app that reads its body, as FastAPI does for a POST
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    server = uvicorn.Server(server_config(app, "127.0.0.1", 0, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")  # 3 of 100 bytes
            t0 = time.monotonic()
            assert s.recv(100) == b""  # closed without an answer
            assert time.monotonic() - t0 < 3
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:  # a whole body is answered
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
            assert s.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(10)


def test_n19_a_full_disk_is_one_line_naming_the_disk_and_the_folder(tmp_path, capsys):
    """Fault injection at the write layer (no tmpfs here without root's mount rights being assumed):
    the run log's file raises ENOSPC on every write, as on a full disk."""
    import errno
    import logging

    from defsentflow.cli import _fail
    from defsentflow.run_log import run_log

    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    log = logging.getLogger("defsentflow.pipeline")
    with run_log(tmp_path / "logs" / "r.log", terminal=False):
        handler = next(h for h in logging.getLogger().handlers if getattr(h, "baseFilename", "").endswith("r.log"))
        handler.stream = Full()
        for i in range(2000):
            log.warning("line %d", i)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err[:2000]
    assert "cannot write the run log" in err and "no space left on the disk mounted at" in err
    assert str(tmp_path / "logs") in err
    assert _fail(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.parquet"))) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and f"writing in {tmp_path}" in line and "catalog heals at the next run" in line
