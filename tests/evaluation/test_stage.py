"""The evaluation stage reuses a finished identical evaluation (issue 33): same model content, task
inputs, settings and code version; any other setting evaluates again under its own figure names."""

from __future__ import annotations

import pytest

import defsentflow.evaluation.stage as stage
from defsentflow.evaluation.config import EvaluateSection
from defsentflow.storage import Catalog


def test_an_identical_evaluation_is_reused_and_filed_under_the_new_id(home, tiny_bert_dir, sts_data_dir, monkeypatch):
    section = EvaluateSection(model=str(tiny_bert_dir), model_id="first", tasks=("sts12",), data_dir=str(sts_data_dir),
                              pooling="mean", device="cpu")
    first = stage.run_evaluate(section, run_id="eval-1")
    assert not first["cached"] and first["recorded"] > 0

    def must_not_run(*args, **kwargs):
        pytest.fail("an identical evaluation was computed again")

    with monkeypatch.context() as m:
        m.setattr(stage, "run_evaluation", must_not_run)
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
