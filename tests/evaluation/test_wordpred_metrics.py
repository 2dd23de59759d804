"""Word prediction's figures as DefSent's reference ``get_mrr`` / top-k count them (def2word.py)."""

import numpy as np
import pytest

from defsentflow.eval_tasks import dictionary_task
from defsentflow.evaluation.config import EvalConfig
from defsentflow.evaluation.ranks import gold_ranks, rank_metrics
from defsentflow.evaluation.wordpred import wordpred_task


def test_mrr_at_10_and_top_k_match_a_hand_computed_ranking():
    # 4 queries over 12 candidates; each query's target column and the scores that rank it
    scores = np.zeros((4, 12))
    scores[0, 3] = 1.0                          # target 3 scores highest: rank 1
    scores[1, :] = np.arange(12)                # target 9: columns 10, 11 score higher: rank 3
    scores[2, :] = np.arange(12)[::-1]          # target 11 scores lowest: rank 12 (outside the top 10)
    scores[3, :] = np.arange(12)                # target 2: 9 columns higher: rank 10
    ranks = gold_ranks(scores, np.array([3, 9, 11, 2]), "pessimistic")[0]
    assert ranks.tolist() == [1, 3, 12, 10]
    m = rank_metrics(ranks)
    # get_mrr sums 1/rank over the top-10 list only and divides by every query
    assert m["mrr@10"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 10) / 4)
    assert m["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 12 + 1 / 10) / 4)
    assert (m["top1"], m["top3"], m["top10"]) == (0.25, 0.5, 0.75)


def test_protocols_are_named_for_what_they_do():
    assert wordpred_task("test", "all-definitions") == "wordpred-alldefs"
    assert dictionary_task("revdict", "dev", "multi-definition") == "revdict-dev-multidef"
    with pytest.raises(ValueError, match="applies to no requested task"):
        EvalConfig(tasks=("revdict",), dictionary="d", revdict_protocols=("all-definitions",))
    with pytest.raises(ValueError):
        EvalConfig(tasks=("wordpred",), dictionary="d", revdict_protocols=("papers",))
