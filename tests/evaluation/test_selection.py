"""PST's selection figure is a registry evaluation: the registry's evaluator computes it, the
evaluation key (autocast included) files it in the one evaluation store, the registry names it."""

from __future__ import annotations

import pytest

from defsentflow.eval_tasks import SELECTION_METRICS, FigureSettings
from defsentflow.evaluation.selection import selection_score
from defsentflow.training.pst_records import Candidate, ScoreRequest


def _request(**kw) -> ScoreRequest:
    cand = Candidate(step=0, seed=None, pooling="mean", entry_encoding=None, lr=None, model_id="base:m",
                     model_dir="/models/m", artifact_key="base:abc", use_pooler=False)
    base = dict(candidate=cand, metric="stsb-dev", pooling="mean", data_dir="/data", max_length=64, autocast="none",
                device="cpu", revdict_mode="cosine", max_queries=1000, batch_size=32,
                dictionary="parquet/dictionaries/toy/k1", root="/root")
    return ScoreRequest(**{**base, **kw})


def test_every_setting_that_changes_the_figure_is_in_its_key_and_name():
    plain, bf16 = _request(), _request(autocast="bf16")
    key = selection_score.key
    assert key(plain, model_key="base:abc", inputs_hash="h") != key(bf16, model_key="base:abc", inputs_hash="h")
    assert key(plain, model_key="base:abc", inputs_hash="h") == key(_request(device="cuda"), model_key="base:abc",
                                                                   inputs_hash="h")  # where it runs: no figure
    assert key(plain, model_key="base:abc", inputs_hash="h") != key(plain, model_key="base:abd", inputs_hash="h")
    assert selection_score.figure(plain) == ("stsb-dev", "all", "spearman")
    assert selection_score.figure(bf16) == ("stsb-dev+bf16", "all", "spearman")
    assert selection_score.column(bf16) == "stsb_dev_bf16_spearman"
    # STS-B dev at the evaluation's length (the leaderboard's stsb_dev_spearman); PST's length does not enter
    assert selection_score.figure(_request(max_length=24)) == selection_score.figure(plain)


def test_the_reverse_dictionary_figure_carries_pst_s_settings():
    req = _request(metric="revdict-mrr", max_length=24, max_queries=50)
    config = selection_score.config(req)
    assert config.tasks == ("revdict",) and config.revdict_splits == ("dev",) and config.revdict_modes == ("cosine",)
    assert config.dictionary == "k1" and config.max_length == 24 and config.batch_size == 32
    assert selection_score.figure(req) == ("revdict-dev+q50+len24", "cosine", "mrr")
    assert selection_score.column(req) == SELECTION_METRICS["revdict-mrr"].column(
        mode="cosine", settings=FigureSettings(max_length=24, max_queries=50)) == "revdict_dev_unseen_q50_len24_cosine_mrr"


def test_an_unknown_metric_is_one_line():
    with pytest.raises(ValueError, match=r"selection metric must be one of \('stsb-dev', 'revdict-mrr'\), got 'x'"):
        selection_score.config(_request(metric="x"))
