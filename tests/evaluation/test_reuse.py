"""A finished identical evaluation is reused by its content key, whoever evaluates; a change to what
the figures depend on (the data, the stored rows) is evaluated again."""

from __future__ import annotations

import json

from defsentflow.evaluation.stage import run_evaluate
from defsentflow.evaluation.suite import EvaluateSection
from defsentflow.storage import Catalog


def _stages(cat: Catalog) -> list[str]:
    return [r["status"] for r in cat.query("SELECT status FROM stages WHERE stage = 'evaluate-model' ORDER BY started_at")]


def test_identical_evaluation_is_reused_and_a_change_is_not(home, tiny_bert_dir, sts_data_dir):
    section = EvaluateSection(model=str(tiny_bert_dir), tasks=("sts12", "stsb-dev"), data_dir=str(sts_data_dir),
                              pooling="mean", model_id="first")
    first = run_evaluate(section, run_id="e1")
    again = run_evaluate(section.model_copy(update={"model_id": "second"}), run_id="e2")  # the id is not in the key
    assert (first["cached"], again["cached"]) == (False, True)
    assert again["rows"] == first["rows"] and again["average"] == first["average"]
    cat = Catalog()
    assert _stages(cat) == ["completed", "cached"]
    assert cat.query("SELECT count(*) AS n FROM metrics WHERE model_id = 'second'")[0]["n"] == len(first["rows"])
    (art,) = cat.query("SELECT artifact_key, path FROM artifacts WHERE kind = 'evaluation'")

    # the stored rows changed on disk: not trusted, evaluated again
    stored = json.loads(open(art["path"]).read())
    stored["rows"][0]["value"] = 0.999
    with open(art["path"], "w") as fh:
        json.dump(stored, fh)
    assert run_evaluate(section, run_id="e3")["rows"] == first["rows"]
    # a data file changed: a new key
    gs = sts_data_dir / "sts" / "STS12-en-test" / "STS.gs.MSRpar.txt"
    gs.write_text("0.125\n" + gs.read_text().split("\n", 1)[1])
    assert run_evaluate(section, run_id="e4")["cached"] is False
    assert _stages(cat) == ["completed", "cached", "completed", "completed"]


def test_an_unrecorded_evaluation_writes_nothing(home, tiny_bert_dir, sts_data_dir):
    section = EvaluateSection(model=str(tiny_bert_dir), tasks=("sts12",), data_dir=str(sts_data_dir), pooling="mean")
    assert run_evaluate(section, run_id=None)["cached"] is False
    assert not (home / "catalog.duckdb").exists() and not (home / "cache").exists()
