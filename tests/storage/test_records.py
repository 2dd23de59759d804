"""On-disk artifact records: written beside each artifact, registered idempotently, a catalog rebuilt."""

from __future__ import annotations

import json

import pytest

from defsentflow.storage import Catalog, hash_path
from defsentflow.storage.catalog import CatalogAccessError
from defsentflow.storage.rebuild import rebuild_catalog
from defsentflow.storage.records import (
    RECORD_NAME,
    iter_record_files,
    make_record,
    read_record,
    record_path,
    write_record,
)


def _artifacts(home):
    """A model folder and a table file, each filed under its key as the project files artifacts."""
    d = home / "models" / "pst" / "k-model"
    d.mkdir(parents=True)
    (d / "weights.bin").write_bytes(b"w" * 1000)
    f = home / "parquet" / "tables" / "k-table.parquet"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"p" * 10)
    return d, f


def _rows(cat):
    return {t: cat.query(f"SELECT * EXCLUDE (created_at) FROM {t} ORDER BY ALL") for t in ("artifacts", "models", "metrics")}


def test_record_paths_are_hidden_and_beside_the_artifact(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    assert record_path(d) == d / RECORD_NAME
    assert record_path(tmp_path / "a.parquet") == tmp_path / ".a.parquet.defsentflow-record.json"


def test_register_artifact_writes_a_record_and_a_lost_catalog_is_rebuilt(home, capsys):
    from defsentflow.cli import main

    d, f = _artifacts(home)
    cat = Catalog()
    cat.register_artifact("k-model", "model", d, hash_path(d), name="m1", config={"lr": 1e-5})
    cat.register_artifact("k-table", "table", f, hash_path(f))
    cat.register_model("m1", d, method="pst", artifact_key="k-model")
    cat.record_metrics("m1", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 0.5}], run_id="r1")
    rec = read_record(d)
    assert rec["path"] == "models/pst/k-model" and rec["manifest"]["weights.bin"]["size"] == 1000
    assert rec["model"]["model_id"] == "m1" and rec["metrics"][0]["value"] == 0.5
    before = _rows(cat)
    assert sorted(read_record(a)["key"] for _, a in iter_record_files(home)) == ["k-model", "k-table"]

    (home / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    assert main(["catalog", "rebuild"]) == 0
    assert "2 artifact records and 1 row records: 2 artifacts, 1 models, 1 metrics" in capsys.readouterr().out
    assert _rows(Catalog()) == before
    again = rebuild_catalog(home)  # idempotent
    assert {k: again[k] for k in ("records", "artifacts", "models", "metrics", "refused")} == {
        "records": 2, "artifacts": 2, "models": 1, "metrics": 1, "refused": 0}
    assert _rows(Catalog()) == before


def test_worker_records_register_once_in_one_transaction(home):
    d, _ = _artifacts(home)
    rec = make_record(home, key="k-model", kind="model", path=d, content_hash=hash_path(d), name="cand-1", run_id="r",
                      model={"model_id": "cand-1", "method": "pst"},
                      metrics=[{"model_id": "cand-1", "task": "stsb-dev", "setting": "all", "metric": "spearman",
                                "value": 0.25}])
    write_record(d, rec)
    cat = Catalog()
    assert cat.register_records([read_record(d)]) == 1
    assert cat.register_records([read_record(d)]) == 1
    rows = _rows(cat)
    assert [r["artifact_key"] for r in rows["artifacts"]] == ["k-model"]
    assert len(rows["models"]) == 1 and len(rows["metrics"]) == 1
    assert cat.artifact("k-model")["path"] == str(d)


def test_a_corrupt_record_is_a_one_line_error(tmp_path):
    d = tmp_path / "a"
    d.mkdir()
    (d / RECORD_NAME).write_text("{not json")
    with pytest.raises(ValueError, match=r"\.defsentflow-record\.json: the artifact record is not JSON") as err:
        read_record(d)
    assert "\n" not in str(err.value)
    (d / RECORD_NAME).write_text(json.dumps({"key": "k"}))
    with pytest.raises(ValueError, match="not an artifact record"):
        read_record(d)


def test_a_catalog_open_on_a_worker_raises(home, monkeypatch):
    Catalog().start_run("x", run_id="r1")
    monkeypatch.setenv("DEFSENTFLOW_WORKER", "1")
    with pytest.raises(CatalogAccessError, match="catalog opened on a Dask worker"):
        Catalog().query("SELECT 1")
    with pytest.raises(CatalogAccessError):
        Catalog().start_run("x", run_id="r2")


def test_a_rebuild_first_writes_the_records_of_artifacts_registered_before_records(home):
    d, _ = _artifacts(home)
    cat = Catalog()
    cat.register_artifact("k-model", "model", d, hash_path(d), name="old")
    cat.register_model("old", d, method="pst", artifact_key="k-model")
    record_path(d).unlink()  # as registered by older code
    before = _rows(cat)
    counts = rebuild_catalog(home)
    assert counts["records_written"] == 1 and read_record(d)["model"]["model_id"] == "old"
    (home / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    rebuild_catalog(home)
    assert _rows(Catalog()) == before



def test_one_writer_files_a_model_and_the_names_that_stand_for_it(home):
    """write_model_row: the models row and its names (model_names, kind 'run': PST's pst-<run>), mirrored
    to the model's row record, so a lost catalog is rebuilt with the names; a model's own id is never a
    name of another; an evaluation of a known model keeps its row."""
    d, _ = _artifacts(home)
    cat = Catalog()
    cat.register_artifact("k-model", "model", d, hash_path(d), name="dsp-1")
    cat.register_model("dsp-1", d, method="defsent_plus", pooling="mean")
    cat.register_model("dsp-1", d, names=[("pst-r1", "run")], run_id="r1", keep=True)  # kept: only the name added
    cat.register_model("dsp-1", "/elsewhere", keep=True)
    rows = cat.query("SELECT model_id, method, pooling, path FROM models")
    assert rows == [{"model_id": "dsp-1", "method": "defsent_plus", "pooling": "mean", "path": str(d)}]
    assert cat.query("SELECT name, model_id, kind, run_id FROM model_names") == [
        {"name": "pst-r1", "model_id": "dsp-1", "kind": "run", "run_id": "r1"}]
    assert cat.query("SELECT display_id, aliases FROM model_aliases") == [
        {"display_id": "dsp-1", "aliases": ["dsp-1", "pst-r1"]}]
    cat.register_model("base:m", "minilm", method="base")
    with pytest.raises(ValueError, match="name 'base:m' is the id of another model"):
        cat.register_model("dsp-1", d, names=[("base:m", "run")], keep=True)

    (home / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    rebuild_catalog(home)
    assert Catalog().query("SELECT name, model_id FROM model_names") == [{"name": "pst-r1", "model_id": "dsp-1"}]
    assert {r["model_id"]: r["path"] for r in Catalog().query("SELECT model_id, path FROM models")} == {
        "dsp-1": str(d), "base:m": "minilm"}  # a model made elsewhere: by its name, never a venv path
