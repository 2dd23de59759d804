"""PST's selection figure is a registry evaluation: the figure path's key (autocast included, where it
runs not) files it in the one store, the registry names it."""

from __future__ import annotations

import pytest

from defsentflow.eval_tasks import SELECTION_METRICS, FigureSettings
from defsentflow.evaluation.figures import figure_key
from defsentflow.evaluation.kinds import KINDS
from defsentflow.training.pst_config import PstSection
from defsentflow.training.selection import selection_config, selection_figure


def _config(metric="stsb-dev", **kw):
    section = PstSection(**{**dict(dictionary="toy", max_length=64, autocast="none", device="cpu",
                                   selection_revdict_mode="cosine", selection_max_queries=1000, entry_batch_size=32), **kw})
    return section, selection_config(section, metric, pooling="mean", data_dir="/data",
                                     dictionary="parquet/dictionaries/toy/k1")


def test_every_setting_that_changes_the_figure_is_in_its_key_and_name():
    (_, plain), (_, bf16), (_, cuda) = _config(), _config(autocast="bf16"), _config(device="cuda")
    sts = KINDS["sts"]

    def key(cfg, model="abc"):
        return figure_key(model, sts, "stsb-dev", cfg, "mean", "h")

    assert key(plain) != key(bf16) and key(plain) == key(cuda)  # where it runs: no figure
    assert key(plain) != key(plain, model="abd")
    assert selection_figure(plain, "stsb-dev", "cosine") == ("stsb-dev", "all", "spearman")
    assert selection_figure(bf16, "stsb-dev", "cosine") == ("stsb-dev+bf16", "all", "spearman")
    # STS-B dev at the evaluation's length (the leaderboard's stsb_dev_spearman); PST's length does not enter
    assert selection_figure(_config(max_length=24)[1], "stsb-dev", "cosine") == selection_figure(plain, "stsb-dev", "cosine")


def test_the_reverse_dictionary_figure_carries_pst_s_settings():
    _, config = _config("revdict-mrr", max_length=24, selection_max_queries=50)
    assert config.tasks == ("revdict",) and config.revdict_splits == ("dev",) and config.revdict_modes == ("cosine",)
    assert config.dictionary == "k1" and config.max_length == 24 and config.batch_size == 32
    assert selection_figure(config, "revdict-mrr", "cosine") == ("revdict-dev+q50+len24", "cosine", "mrr")
    assert SELECTION_METRICS["revdict-mrr"].column(mode="cosine", settings=FigureSettings(max_length=24, max_queries=50)) \
        == "revdict_dev_unseen_q50_len24_cosine_mrr"


def test_an_unknown_metric_is_one_line():
    with pytest.raises(ValueError, match=r"selection metric must be one of \('stsb-dev', 'revdict-mrr'\), got 'x'"):
        _config("x")
