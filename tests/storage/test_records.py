"""On-disk artifact records: written beside each artifact, registered idempotently, a catalog rebuilt."""

from __future__ import annotations

import json

import pytest

from defsentflow.storage import Catalog
from defsentflow.storage.catalog import CatalogAccessError, rebuild_catalog
from defsentflow.storage.records import (
    RECORD_NAME,
    iter_records,
    make_record,
    read_record,
    record_path,
    write_record,
)


def _artifacts(home):
    d = home / "models" / "m1"
    d.mkdir(parents=True)
    (d / "weights.bin").write_bytes(b"w" * 1000)
    f = home / "parquet" / "t.parquet"
    f.parent.mkdir()
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
    cat.register_artifact("k-model", "model", d, "h1", name="m1", config={"lr": 1e-5})
    cat.register_artifact("k-table", "table", f, "h2")
    cat.register_model("m1", d, method="pst", artifact_key="k-model")
    cat.record_metrics("m1", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 0.5}], run_id="r1")
    rec = read_record(d)
    assert rec["path"] == "models/m1" and rec["manifest"]["weights.bin"]["size"] == 1000
    assert rec["model"]["model_id"] == "m1" and rec["metrics"][0]["value"] == 0.5
    before = _rows(cat)
    assert sorted(r["key"] for _, r in iter_records(home)) == ["k-model", "k-table"]

    (home / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    assert main(["catalog", "rebuild"]) == 0
    assert "2 artifact records: 2 artifacts, 1 models, 1 metrics" in capsys.readouterr().out
    assert _rows(Catalog()) == before
    assert rebuild_catalog(home) == {"records": 2, "artifacts": 2, "models": 1, "metrics": 1}  # idempotent
    assert _rows(Catalog()) == before


def test_worker_records_register_once_in_one_transaction(home):
    d, _ = _artifacts(home)
    rec = make_record(home, key="cand-1", kind="model", path=d, content_hash="h", name="cand-1", run_id="r",
                      model={"model_id": "cand-1", "method": "pst"},
                      metrics=[{"model_id": "cand-1", "task": "stsb-dev", "setting": "all", "metric": "spearman",
                                "value": 0.25}])
    write_record(d, rec)
    cat = Catalog()
    assert cat.register_records([read_record(d)]) == 1
    assert cat.register_records([read_record(d)]) == 1
    rows = _rows(cat)
    assert [r["artifact_key"] for r in rows["artifacts"]] == ["cand-1"]
    assert len(rows["models"]) == 1 and len(rows["metrics"]) == 1
    assert cat.artifact("cand-1")["path"] == str(d)


def test_a_corrupt_record_is_a_one_line_error(tmp_path):
    d = tmp_path / "a"
    d.mkdir()
    (d / RECORD_NAME).write_text("{not json")
    with pytest.raises(ValueError, match=r"\.defsentflow-record\.json: unreadable artifact record") as err:
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
