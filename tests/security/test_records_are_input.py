"""Issue 36, facts 1-2: records found on disk are input. ``catalog rebuild`` (and the heal when a run
starts) registers a record only if it is well-formed, lies where it says, fits its kind and key and
still describes its files; a bad record is moved aside with its reason and the rebuild goes on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from defsentflow.cli import main
from defsentflow.storage import Catalog, hash_path
from defsentflow.storage.rebuild import heal_catalog, rebuild_catalog
from defsentflow.storage.records import RECORD_NAME, read_record, record_path
from defsentflow.storage.row_records import row_record_path

KEY = "0123456789abcdef0123456789abcdef"
RUN = "demo-1"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A data root as a finished run leaves it: a model, its metrics, a run with a stage, a report
    (built once; each test works on its own copy)."""
    home = tmp_path_factory.mktemp("records-input") / "home"
    model = home / "models" / "pst" / KEY
    model.mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights" * 100)
    (model / "config.json").write_text("{}")
    cat = Catalog(home)
    cat.start_run("pipeline", config={"name": "demo"}, run_id=RUN)
    cat.register_artifact(KEY, "model", model, hash_path(model), name="dsp-1", run_id=RUN)
    cat.register_model("dsp-1", model, method="defsent_plus", pooling="mean", run_id=RUN, artifact_key=KEY)
    cat.record_metrics("dsp-1", [{"task": "revdict-dev", "setting": "cosine", "metric": "mrr", "value": 0.25}],
                       run_id=RUN)
    cat.record_metrics("base:bert", [{"task": "revdict-dev", "setting": "cosine", "metric": "mrr", "value": 0.125}],
                       run_id=RUN)
    cat.record_stage(RUN, "pst-step-1", "completed", cache_key=KEY, seconds=1.5)
    report = home / "reports" / RUN
    report.mkdir(parents=True)
    (report / "report.html").write_text("<p>ours</p>")
    cat.register_artifact(f"report-{RUN}", "report", report, hash_path(report), name=f"report-{RUN}", run_id=RUN)
    cat.end_run(RUN, "completed", flow="pipeline")
    return home


@pytest.fixture()
def root(finished, home) -> Path:
    shutil.rmtree(home)
    shutil.copytree(finished, home)
    return home


def _tables(cat: Catalog) -> dict[str, list]:
    return {t: sorted(map(repr, cat.query(f"SELECT * FROM {t}"))) for t in ("artifacts", "models", "metrics", "runs",
                                                                             "stages")}


def _plant(folder: Path, rec: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RECORD_NAME).write_text(json.dumps(rec))
    return folder / RECORD_NAME


def test_a_rebuild_restores_every_row_and_removes_rows_whose_records_are_gone(root):
    before = _tables(Catalog())
    (root / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    counts = rebuild_catalog(root)
    assert counts["refused"] == 0 and counts["runs"] == 1 and counts["models"] == 1 and counts["metrics"] == 2
    assert _tables(Catalog()) == before  # created_at, status, config, stages and metrics as they were
    assert rebuild_catalog(root)["refused"] == 0 and _tables(Catalog()) == before  # idempotent

    shutil.rmtree(root / "reports" / RUN)
    row_record_path(root, "model", "base:bert").unlink()
    rebuild_catalog(root)
    cat = Catalog()
    assert not cat.query("SELECT 1 FROM artifacts WHERE kind = 'report'")
    assert not cat.query("SELECT 1 FROM metrics WHERE model_id = 'base:bert'")
    assert cat.query("SELECT status FROM runs")[0]["status"] == "completed"


FORGED = [  # (how the record is changed, the reason given); each planted in its own copy of the model folder
    (lambda r: {**r, "path": "../outside"}, "is not the artifact that holds it"),
    (lambda r: {**r, "path": "/etc"}, "is not the artifact that holds it"),
    (lambda r: {**r, "kind": "report"}, "a report artifact lies under reports/"),
    (lambda r: {**r, "key": "f" * 32}, "is not the name it is filed under"),
    (lambda r: {**r, "metrics": "x"}, "metrics: Input should be a valid list"),
    (lambda r: {**r, "size_bytes": "12"}, "size_bytes: Input should be a valid integer"),
    (lambda r: {**r, "manifest": {"model.safetensors": {"size": 1, "quick": "0" * 32, "hash": "0" * 32}},
                "manifest_hash": None}, "files are not the ones it describes"),
    (lambda r: {**r, "metrics": [{"model_id": "other", "task": "t", "setting": "s", "metric": "m", "value": 1.0}]},
     "files metrics under model 'other'"),
    (lambda r: {**r, "metrics": [{**r["metrics"][0], "value": float("nan")}]}, "Input should be a finite number"),
]
HOSTILE = ['{"format": 1, "key": ', "[" * 100_000 + "]" * 100_000, "\udcff", ""]  # truncated, deep, not UTF-8, empty


def test_forged_records_are_quarantined_with_their_reasons_and_the_rest_registered(root, capsys):
    model = root / "models" / "pst" / KEY
    genuine = read_record(model)
    planted = {}
    for i, (forge, reason) in enumerate(FORGED):
        key = f"{i:032x}"
        copy = root / "models" / "pst" / key
        shutil.copytree(model, copy)
        rec = {**genuine, "key": key, "path": f"models/pst/{key}", "model": None}
        record_path(copy).write_text(json.dumps(forge(rec)))
        planted[f"models/pst/{key}/{RECORD_NAME}"] = reason
    for i, text in enumerate(HOSTILE):
        other = root / "revdict" / f"{i:032x}"
        other.mkdir(parents=True)
        (other / RECORD_NAME).write_bytes(text.encode("utf-8", "surrogateescape"))
    (root / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    assert main(["catalog", "rebuild"]) == 0
    out = capsys.readouterr().out
    refused = {line.split(": ", 2)[1]: line for line in out.splitlines() if line.startswith("refused: ")}
    for where, reason in planted.items():
        assert reason in refused.get(where, ""), (where, reason, out)
    assert f"{len(FORGED) + len(HOSTILE)} records refused ({len(FORGED) + len(HOSTILE)} moved to quarantine/records/)" in out
    reasons = sorted(root.joinpath("quarantine", "records").glob("*.reason.txt"))
    assert len(reasons) == len(FORGED) + len(HOSTILE) and all(r.read_text().count("\n") == 1 for r in reasons)
    cat = Catalog()
    assert sorted(r["artifact_key"] for r in cat.query("SELECT artifact_key FROM artifacts")) == [KEY, f"report-{RUN}"]
    assert cat.query("SELECT count(*) AS n FROM metrics")[0]["n"] == 2


def test_a_bad_record_never_stops_a_run_or_the_next_one(root):
    (root / "revdict" / ("a" * 32)).mkdir(parents=True)
    (root / "revdict" / ("a" * 32) / RECORD_NAME).write_text('{"format": 1, "key": ')
    model = root / "models" / "pst" / KEY
    record_path(model).write_text(json.dumps({**read_record(model), "path": "../x"}))
    (root / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    counts = heal_catalog(root)  # what `run` does first
    assert counts["refused"] == 2 and counts["artifacts"] == 1 and counts["runs"] == 1
    assert any("records/models/dsp-1" in line for line in counts["left_out"])
    assert heal_catalog(root) is None  # the next run finds a catalog: no manual clean-up


def test_records_pointing_outside_are_never_served_or_exported(root, tmp_path):
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "report.html").write_text("<p>not yours</p>")
    (outside / "config.json").write_text("{}")
    forged = read_record(root / "reports" / RUN)
    _plant(root / "reports" / "r2", {**forged, "path": str(outside), "run_id": "r2", "key": "report-r2"})
    # a row record moving the trained model out of the root, and one naming a folder with no record
    path = row_record_path(root, "model", "dsp-1")
    body = json.loads(path.read_text())
    body["tables"]["models"]["rows"][0][1] = str(outside)
    path.write_text(json.dumps(body))
    fake = row_record_path(root, "model", "fake")
    fake.write_text(json.dumps({**body, "id": "fake", "tables": {"models": {
        "columns": body["tables"]["models"]["columns"],
        "rows": [["fake", "models/pst/nothing-here", *body["tables"]["models"]["rows"][0][2:]]]}}}))
    (root / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    counts = rebuild_catalog(root)
    assert counts["refused"] == 2 and len(counts["left_out"]) == 1, counts  # 'fake' stays, unused
    assert "names models/pst/nothing-here, which holds no trusted artifact record" in counts["left_out"][0]
    cat = Catalog()
    assert cat.query("SELECT path FROM models WHERE model_id = 'dsp-1'")[0]["path"] == str(root / "models" / "pst" / KEY)
    assert not cat.query("SELECT 1 FROM models WHERE model_id = 'fake'")
    with TestClient(create_app(root, max_batch=1, max_wait_ms=1)) as client:
        assert client.get("/runs/r2/report/report.html").status_code == 404
        assert client.get(f"/runs/{RUN}/report/report.html").text == "<p>ours</p>"


def test_colliding_keys_and_records_from_another_root_are_refused(root, tmp_path):
    model = root / "models" / "pst" / KEY
    twin = root / "models" / "surrogate" / KEY  # the same key filed twice
    shutil.copytree(model, twin)
    rec = read_record(model)
    record_path(twin).write_text(json.dumps({**rec, "path": f"models/surrogate/{KEY}",
                                             "model": {**rec["model"], "path": f"models/surrogate/{KEY}"}}))
    other = tmp_path / "other"  # row records of another data root, copied in
    Catalog(other).start_run("pipeline", config={"name": "x"}, run_id="foreign")
    shutil.copy(row_record_path(other, "run", "foreign"), row_record_path(root, "run", "foreign"))
    (root / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    counts = rebuild_catalog(root)
    problems = "\n".join(counts["problems"])
    assert counts["refused"] == 3, (counts["problems"], counts["left_out"])
    assert problems.count(f"artifact key {KEY} is also claimed") == 2
    assert "written in another data root" in problems
    assert [r["run_id"] for r in Catalog().query("SELECT run_id FROM runs")] == [RUN]
