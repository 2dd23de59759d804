"""Storage probes (issue 22, facts 4, 8, 9, 10, 11; issue 23, the catalog from several threads)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from defsentflow.cli import main
from defsentflow.storage import Catalog
from defsentflow.storage import catalog as catalog_module
from tests.cli_output import without_root_line

DEFS = {"cat": "a small animal that lives in a house", "river": "water that moves to the sea",
        "king": "the man who is ruler of a country", "book": "pages of words to read"}


@pytest.fixture()
def filled(home, tiny_bert_dir):
    """A data root with a registered model inside it, its reverse-dictionary index, a run and metrics."""
    from defsentflow.revdict import build_revdict_index
    from defsentflow.storage import hash_path

    model = home / "models" / "pst" / "model-tiny"  # filed under its key, as the project files models
    shutil.copytree(tiny_bert_dir, model)
    cat = Catalog()
    cat.register_artifact("model-tiny", "model", model, hash_path(model), name="tiny")
    cat.register_model("tiny", model, method="pst", pooling="mean", run_id="run-1", artifact_key="model-tiny")
    table = pa.table({"entry": list(DEFS), "definition": list(DEFS.values()), "split": ["test"] * len(DEFS)})
    index = build_revdict_index(str(model), table, mode="cosine", device="cpu")
    cat.start_run("pipeline", config={"name": "tiny"}, run_id="run-1")
    cat.record_metrics("tiny", [{"task": "revdict-dev", "setting": "cosine", "metric": "mrr", "value": 0.5, "n": 4}],
                       run_id="run-1")
    cat.end_run("run-1", "completed", flow="pipeline")
    return home, model, index.path


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


# -- fact 8: read commands never create a catalog; a corrupt one names the rebuild --------------------------
@pytest.mark.parametrize("argv", [["leaderboard"], ["sql", "SELECT 1"], ["datasets"], ["report", "r1", "--out", "OUT"]])
def test_read_commands_never_create_a_catalog(home, tmp_path, capsys, argv):
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert main(argv) == 2  # leaderboard too (issue 44, M14: it exited 0 where this page says 2)
    err = without_root_line(capsys.readouterr().err).strip()
    assert err.startswith("defsentflow: error: no catalog at") and "\n" not in err
    assert not (home / "catalog.duckdb").exists()


def test_a_corrupt_catalog_is_one_line_naming_the_rebuild(home, capsys):
    (home / "catalog.duckdb").write_bytes(b"this is not a database" * 500)
    for argv in (["leaderboard"], ["sql", "SELECT 1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "catalog is corrupt" in err and "defsentflow catalog rebuild" in err and "\n" not in err
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    with TestClient(create_app(max_batch=1, max_wait_ms=1)) as client:
        res = client.get("/api/runs")
    assert res.status_code == 503 and "defsentflow catalog rebuild" in res.json()["detail"]
    assert main(["catalog", "rebuild"]) == 0
    assert "kept aside" in capsys.readouterr().out
    assert len(list(home.glob("catalog.duckdb.corrupt-*"))) == 1 and main(["leaderboard"]) == 0


def test_a_run_rebuilds_an_emptied_catalog_from_records(filled):
    from defsentflow.storage.rebuild import heal_catalog

    home, model, _ = filled
    (home / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    counts = heal_catalog()
    assert counts["artifacts"] == 2 and counts["models"] == 1 and counts["metrics"] == 1
    assert Catalog().artifact("model-tiny")["path"] == str(model)
    assert heal_catalog() is None  # a catalog with artifacts is left alone


# -- fact 11: read-only data roots ---------------------------------------------------------------------------
def test_readers_work_on_a_read_only_root_and_never_write(filled, tmp_path, monkeypatch, capsys):
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    home, _, _ = filled
    Catalog._ddl_applied.clear()  # a new process: nothing known to be migrated
    opened = []
    real_open = Catalog._open

    def spy(self, read_only, config):
        opened.append(read_only)
        return real_open(self, read_only, config)

    def no_migrate(con):
        raise AssertionError("a reader applied schema changes")

    monkeypatch.setattr(Catalog, "_open", spy)
    monkeypatch.setattr(catalog_module, "migrate", no_migrate)
    before = _snapshot(home)
    modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")]}
    try:
        for p in modes:
            p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
        assert main(["leaderboard"]) == 0 and "tiny" in capsys.readouterr().out
        assert main(["sql", "SELECT count(*) AS n FROM artifacts"]) == 0 and "2" in capsys.readouterr().out
        assert main(["datasets"]) == 0
        assert main(["report", "run-1", "--out", str(tmp_path / "rep")]) == 0
        assert (tmp_path / "rep" / "report.html").is_file()
        with TestClient(create_app(max_batch=4, max_wait_ms=1)) as client:
            assert client.get("/api/runs").status_code == 200
            hit = client.get("/api/revdict", params={"q": DEFS["river"], "model": "tiny", "k": 2})
            assert hit.status_code == 200, hit.text
    finally:
        for p, m in modes.items():
            p.chmod(stat.S_IMODE(m))
    assert opened and all(opened), "a reader opened the catalog writable"
    assert _snapshot(home) == before


def test_a_reader_with_pending_schema_reads_what_is_there(home, tmp_path, monkeypatch, capsys):
    from defsentflow.storage import sql_dir

    Catalog().start_run("x", run_id="r1")
    ddl = tmp_path / "sql"
    shutil.copytree(sql_dir(), ddl)
    (ddl / "999_later.sql").write_text("CREATE TABLE IF NOT EXISTS later (a INTEGER);\n")
    monkeypatch.setenv("DEFSENTFLOW_SQL_DIR", str(ddl))
    Catalog._ddl_applied.clear()
    before = _snapshot(home)
    assert main(["sql", "SELECT run_id FROM runs"]) == 0 and "r1" in capsys.readouterr().out
    assert main(["sql", "SELECT * FROM later"]) == 2  # the table the pending file would make: one line
    err = capsys.readouterr().err.strip()
    assert "later" in err and "\n" not in err
    from defsentflow.storage.catalog import CatalogSchemaError

    with pytest.raises(CatalogSchemaError, match="schema is older than this code"):
        Catalog(reader=True).query("SELECT * FROM later")
    assert _snapshot(home) == before  # no schema change applied by the reader


# -- fact 4: reads run with a time limit; a long read never makes a write fail ---------------------------------
def test_a_long_sql_read_is_interrupted_and_a_write_beside_it_succeeds(home):
    Catalog().start_run("x", run_id="r0")
    env = {**os.environ, "DEFSENTFLOW_HOME": str(home)}
    t0 = time.monotonic()
    reader = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "sql", "--timeout", "1.5",
                               "SELECT sum(hash(i)) FROM range(30000000000) t(i)"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30  # wait until the reader holds the file
        while reader.poll() is None and time.monotonic() < deadline:
            try:
                duckdb.connect(str(home / "catalog.duckdb")).close()
            except duckdb.Error:
                break
            time.sleep(0.05)
        t_write = time.monotonic()
        Catalog().start_run("pipeline", run_id="r1")  # a pipeline's write, beside the long read
        assert time.monotonic() - t_write < 1.5 + 10
        _, err = reader.communicate(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 2
    assert err.strip().startswith("defsentflow: error: query interrupted after its time limit of 1.5s")
    assert "\n" not in err.strip() and time.monotonic() - t0 < 40
    assert Catalog().query("SELECT count(*) AS n FROM runs")[0]["n"] == 2


def test_serve_reads_are_interrupted_too(home):
    from defsentflow.storage.catalog import QueryTimeoutError

    Catalog().start_run("x", run_id="r0")
    cat = Catalog(reader=True, query_timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(QueryTimeoutError, match="time limit of 0.5s"):
        cat.query("SELECT sum(hash(i)) FROM range(30000000000) t(i)")
    assert time.monotonic() - t0 < 10


# -- issue 23: the catalog from several threads of one process -----------------------------------------------
def test_two_reader_threads_and_a_writer_thread_never_fail(home):
    cat = Catalog()
    cat.start_run("x", run_id="r0")
    errors: list[BaseException] = []

    def reader():
        try:
            for _ in range(200):
                cat.query("SELECT count(*) AS n FROM runs")
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def writer():
        try:
            for i in range(200):
                cat.record_stage("r0", f"s{i}", "completed")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=reader), threading.Thread(target=reader), threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cat.query("SELECT count(*) AS n FROM stages")[0]["n"] == 200


# -- fact 9: a copied root reads only its own files ------------------------------------------------------------
def test_a_copied_root_reads_only_its_own_files(filled, tmp_path, monkeypatch):
    from defsentflow.revdict import RevdictIndex
    from defsentflow.serve.catalog import ServeCatalog

    home, model, index_dir = filled
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    gone = tmp_path / "moved-away"
    home.rename(gone)  # the original's paths no longer exist (chmod 000 alone does not stop root)
    gone.chmod(0)
    try:
        monkeypatch.setenv("DEFSENTFLOW_HOME", str(copy))
        cat = Catalog()
        assert cat.artifact("model-tiny")["path"] == str(copy / "models" / "pst" / "model-tiny")
        assert cat.query("SELECT path FROM models WHERE model_id = 'tiny'")[0]["path"] == str(copy / "models" / "pst" / "model-tiny")
        served = ServeCatalog(copy).indexes()
        assert [Path(i.path).parent.parent for i in served] == [copy]
        idx = RevdictIndex(served[0].path)
        assert idx.meta["model"] == str(copy / "models" / "pst" / "model-tiny")
        assert idx.search([DEFS["king"]], k=1, device="cpu")[0][0][0] == "king"
        assert not list(copy.rglob("*")) or all(str(gone) not in p.read_text(errors="ignore")
                                                 for p in copy.rglob("*.json"))
    finally:
        gone.chmod(0o755)


# -- fact 10: same-size corruption of a registered model is found before it is loaded ---------------------------
def test_a_same_size_change_in_model_weights_is_a_one_line_error(filled, tmp_path, capsys):
    from defsentflow.storage.integrity import _VERIFIED, ArtifactChangedError

    home, model, _ = filled
    _VERIFIED.clear()
    weights = model / "model.safetensors"
    size = weights.stat().st_size
    with open(weights, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(os.urandom(4096))
    assert weights.stat().st_size == size
    from defsentflow.encoders import load_encoder

    with pytest.raises(ArtifactChangedError, match="model.safetensors content differs") as err:
        load_encoder(str(model), device="cpu")
    assert "\n" not in str(err.value)
    (tmp_path / "in.txt").write_text("a small animal\n")
    assert main(["encode", str(model), "--input", str(tmp_path / "in.txt"), "--out", str(tmp_path / "v.parquet"),
                 "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "model.safetensors content differs" in err and "\n" not in err
    assert not (tmp_path / "v.parquet").exists()


def test_serve_answers_409_naming_a_model_whose_files_changed(filled):
    """Issue 36: a changed model file was a bare 500 on every look-up."""
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app
    from defsentflow.storage.integrity import _VERIFIED

    home, model, _ = filled
    _VERIFIED.clear()
    weights = model / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.seek(weights.stat().st_size // 2)
        fh.write(os.urandom(4096))
    with TestClient(create_app(max_batch=1, max_wait_ms=1)) as client:
        res = client.get("/api/revdict", params={"q": DEFS["river"], "model": "tiny", "k": 2})
    assert res.status_code == 409 and res.json()["detail"].startswith("model tiny: ")
    assert "content differs from its registered hash" in res.json()["detail"]
    assert res.headers.get("x-content-type-options") == "nosniff"

