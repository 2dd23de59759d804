"""The evaluation stage reuses a finished identical evaluation (issue 33): same model content, task
inputs, settings and code version, whoever evaluates; any other setting, a changed data file or
changed stored rows evaluate again (one file for the behaviour: test_reuse.py was merged here)."""

from __future__ import annotations

import json

import pytest

import defsentflow.evaluation.stage as stage
from defsentflow.evaluation.config import EvaluateSection
from defsentflow.evaluation.kinds.sts import StsKind
from defsentflow.storage import Catalog


def test_an_identical_evaluation_is_reused_and_filed_under_the_new_id(home, tiny_bert_dir, sts_data_dir, monkeypatch):
    section = EvaluateSection(model=str(tiny_bert_dir), model_id="first", tasks=("sts12",), data_dir=str(sts_data_dir),
                              pooling="mean", device="cpu")
    first = stage.run_evaluate(section, run_id="eval-1")
    assert not first["cached"] and first["recorded"] > 0

    def must_not_run(*args, **kwargs):
        pytest.fail("an identical evaluation was computed again")

    with monkeypatch.context() as m:
        m.setattr(StsKind, "run", must_not_run)
        # another id and device change no figure: the finished evaluation is filed again
        again = stage.run_evaluate(section.model_copy(update={"model_id": "second", "device": "auto"}), run_id="eval-2")
    assert again["cached"] and again["rows"] == first["rows"] and again["recorded"] == first["recorded"]
    cat = Catalog()
    filed = {r["model_id"]: r["value"] for r in cat.query(
        "SELECT model_id, value FROM metrics WHERE task = 'sts12' AND setting = 'all'")}
    assert filed["first"] == filed["second"]
    assert cat.query("SELECT status FROM stages WHERE run_id = 'eval-2'") == [{"status": "cached"}]
    # a setting that changes the figures: evaluated again, under the variant's own name
    short = stage.run_evaluate(section.model_copy(update={"model_id": "first", "max_length": 8}), run_id="eval-3")
    assert not short["cached"] and {r["task"] for r in short["rows"]} == {"sts12+len8"}
    names = {r["task"] for r in cat.query("SELECT DISTINCT task FROM metrics WHERE model_id = 'first'")}
    assert names == {"sts12", "sts12+len8"}   # the first figure kept, the new one beside it


def test_changed_stored_rows_or_data_are_evaluated_again(home, tiny_bert_dir, sts_data_dir):
    section = EvaluateSection(model=str(tiny_bert_dir), tasks=("sts12", "stsb-dev"), data_dir=str(sts_data_dir),
                              pooling="mean", model_id="first")
    first = stage.run_evaluate(section, run_id="e1")
    cat = Catalog()
    arts = cat.query("SELECT artifact_key, path FROM artifacts WHERE kind = 'evaluation' ORDER BY path")
    assert len(arts) == 2  # one figure each: sts12, stsb-dev
    art = arts[0]
    # the stored rows changed on disk: not trusted, evaluated again
    stored = json.loads(open(art["path"]).read())
    stored["rows"][0]["value"] = 0.999
    with open(art["path"], "w") as fh:
        json.dump(stored, fh)
    assert stage.run_evaluate(section, run_id="e3")["rows"] == first["rows"]
    # a data file changed: a new key
    gs = sts_data_dir / "sts" / "STS12-en-test" / "STS.gs.MSRpar.txt"
    gs.write_text("0.125\n" + gs.read_text().split("\n", 1)[1])
    assert stage.run_evaluate(section, run_id="e4")["cached"] is False
    statuses = [r["status"] for r in cat.query("SELECT status FROM stages WHERE stage = 'evaluate-model' ORDER BY started_at")]
    assert statuses == ["completed", "completed", "completed"]


def test_an_unrecorded_evaluation_writes_nothing(home, tiny_bert_dir, sts_data_dir):
    section = EvaluateSection(model=str(tiny_bert_dir), tasks=("sts12",), data_dir=str(sts_data_dir), pooling="mean")
    assert stage.run_evaluate(section, run_id=None)["cached"] is False
    assert not (home / "catalog.duckdb").exists() and not (home / "cache").exists()
