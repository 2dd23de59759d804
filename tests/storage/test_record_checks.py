"""Where an artifact record may lie, and what it must say about itself."""

from __future__ import annotations

import json

import pytest

from defsentflow.storage import hash_path
from defsentflow.storage.record_checks import RecordError, check_artifact_record, quarantine_record
from defsentflow.storage.records import make_record, record_path


def _record(home, rel: str, key: str, kind: str, run_id: str | None = None):
    p = home / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix in (".json", ".parquet"):
        p.write_text("{}")
    else:
        p.mkdir()
        (p / "f").write_text("x")
    rec = make_record(home, key=key, kind=kind, path=p, content_hash=hash_path(p), run_id=run_id)
    record_path(p).write_text(json.dumps(rec))
    return p


@pytest.mark.parametrize(("rel", "key", "kind", "run_id", "problem"), [
    ("pst/runs/r1.json", "a" * 32, "pst_result", "r1", None),          # filed under its run
    ("pst/runs/r1.json", "a" * 32, "pst_result", "r2", "does not match run 'r2'"),
    ("reports/r1", "report-r1", "report", "r1", None),
    ("reports/r1", "report-r2", "report", "r1", "a report's key is report-<run id>"),
    ("parquet/harvest/bbc/" + "b" * 32 + "/pairs.parquet", "b" * 32, "pairs", None, None),  # key: a folder on the path
    ("models/pst/" + "c" * 32, "c" * 32, "model", None, None),
    ("records/x/" + "d" * 32, "d" * 32, "newkind", None, "no artifact lies under records/"),
])
def test_kind_and_key_fit_where_the_record_lies(home, rel, key, kind, run_id, problem):
    art = _record(home, rel, key, kind, run_id)
    if problem is None:
        assert check_artifact_record(home, record_path(art), art)["key"] == key
    else:
        with pytest.raises(RecordError, match=problem.replace("(", r"\(").replace(")", r"\)")):
            check_artifact_record(home, record_path(art), art)


def test_a_quarantined_record_keeps_its_reason(home):
    art = _record(home, "models/pst/" + "c" * 32, "c" * 32, "model")
    moved = quarantine_record(home, record_path(art), "why")
    assert moved is not None and not record_path(art).exists() and moved.read_text().startswith("{")
    assert moved.with_name(moved.name + ".reason.txt").read_text() == f"models/pst/{'c' * 32}/.defsentflow-record.json: why\n"
