"""The task kinds: the figure path loops over them, every dictionary task gets the
evaluation's pooling, max length and tie rule (issue 37), each runs the protocols it serves."""

from __future__ import annotations

import defsentflow.evaluation.revdict as revdict
import defsentflow.evaluation.wordpred as wordpred
from defsentflow.evaluation.config import EvalConfig
from defsentflow.evaluation.kinds import KINDS, kinds_for
from defsentflow.evaluation.suite import run_evaluation


def test_the_suite_hands_each_evaluator_the_evaluation_s_settings(monkeypatch, tmp_path):
    calls: dict[str, list[dict]] = {"revdict": [], "wordpred": []}

    def fake_revdict(model, dictionary, **kw):
        calls["revdict"].append(kw)
        return [{"rows": [{"task": "revdict", "setting": "cosine", "metric": "mrr", "value": 0.5}]} for _ in kw["runs"]]

    def fake_wordpred(model, dictionary, **kw):
        calls["wordpred"].append(kw)
        return {"rows": [{"task": "wordpred", "setting": "mlm_head", "metric": "mrr", "value": 0.1}]}

    monkeypatch.setattr(revdict, "evaluate_revdict_runs", fake_revdict)
    monkeypatch.setattr(wordpred, "evaluate_wordpred", fake_wordpred)
    cfg = EvalConfig(tasks=("revdict", "wordpred"), dictionary="toy", pooling="cls", max_length=77, ties="mid",
                     revdict_protocols=("unseen", "all-definitions", "multi-definition"), data_dir=str(tmp_path))
    assert [k.name for k in kinds_for(cfg)] == ["revdict", "wordpred"]
    result = run_evaluation("minilm", cfg)
    (rd,) = calls["revdict"]
    assert (rd["pooling"], rd["max_length"], rd["ties"]) == ("cls", 77, "mid")
    # all-definitions is word prediction's only: the reverse dictionary runs the two it serves
    assert rd["runs"] == [("dev", "unseen"), ("dev", "multi-definition"), ("test", "unseen"), ("test", "multi-definition")]
    assert [(c["split"], c["protocol"]) for c in calls["wordpred"]] == [
        (s, p) for s in ("dev", "test") for p in ("unseen", "all-definitions", "multi-definition")]
    assert all((c["pooling"], c["max_length"], c["ties"]) == ("cls", 77, "mid") for c in calls["wordpred"])
    assert set(result.seconds) == {"revdict", "wordpred"} and len(result.rows) == 4 + 6
    # no STS task requested: the STS evaluator is skipped, the data folder never read
    assert not KINDS["sts"].tasks(cfg)
