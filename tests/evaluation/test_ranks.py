"""Ranks with ties stated (issue 37): pessimistic by default, mid and optimistic on request, the tied
queries counted, in the ranking core and through word prediction and the reverse dictionary."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.evaluation.ranks import chance_mrr, gold_ranks, rank_metrics
from defsentflow.evaluation.revdict import revdict_ranks


def _slow_rank(row: np.ndarray, gold: int, ties: str) -> float:
    """The obvious loop: count the candidates above the gold one, then place it among its equals."""
    higher = sum(1 for c, s in enumerate(row) if c != gold and s > row[gold])
    equal = sum(1 for c, s in enumerate(row) if c != gold and s == row[gold])
    return 1 + higher + {"pessimistic": equal, "mid": equal / 2, "optimistic": 0}[ties]


def test_all_equal_scores_rank_the_gold_last_and_count_every_query_as_tied():
    scores = np.zeros((5, 30))
    gold = np.array([0, 7, 29, 3, 12])
    ranks, tied = gold_ranks(scores, gold)   # pessimistic: the default
    m = rank_metrics(ranks, tied)
    assert ranks.tolist() == [30.0] * 5 and tied.tolist() == [29] * 5
    assert m["mrr@10"] == 0.0 and m["top10"] == 0.0 and m["n_tied"] == 5
    assert m["mrr"] == pytest.approx(1 / 30) and m["mrr"] < chance_mrr(30)
    assert rank_metrics(*gold_ranks(scores, gold, "optimistic"))["mrr@10"] == 1.0  # the old rule
    assert gold_ranks(scores, gold, "mid")[0].tolist() == [15.5] * 5
    with pytest.raises(ValueError, match="ties must be one of"):
        gold_ranks(scores, gold, "random")


@pytest.mark.parametrize("ties", ["pessimistic", "mid", "optimistic"])
def test_ranks_with_ties_equal_a_slow_loop(ties):
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, size=(40, 12)).astype(float)   # many exact ties
    gold = rng.integers(0, 12, size=40)
    ranks, tied = gold_ranks(scores, gold, ties)
    assert ranks.tolist() == [_slow_rank(r, g, ties) for r, g in zip(scores, gold)]
    assert rank_metrics(ranks, tied)["n_tied"] == sum((scores[i] == scores[i, g]).sum() > 1 for i, g in enumerate(gold))


def test_bit_identical_entries_tie_in_the_reverse_dictionary():
    # entries 0 and 1 share their definitions' vectors (lemmas of one synset, as OEWN's AMP/AC rows of
    # such lemmas are bit-identical): a query of entry 0 ties with entry 1 exactly
    same = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [-1.0, 0.5]])
    entry = np.array([0, 0, 1, 1, 2, 2])
    for ties, want in (("pessimistic", 2.0), ("mid", 1.5), ("optimistic", 1.0)):
        ranks, tied = revdict_ranks(same[[0]], np.array([0]), same, entry, 3, cosine=True, ties=ties, with_ties=True)
        assert ranks.tolist() == [want] and tied.tolist() == [1], ties
    ranks, tied = revdict_ranks(same[[4]], np.array([4]), same, entry, 3, cosine=True, with_ties=True)
    assert ranks.tolist() == [1.0] and tied.tolist() == [0]


def test_word_prediction_ranks_all_equal_logits_last(tiny_mlm_dir, monkeypatch):
    """Through evaluate_wordpred: a head that scores every word alike gives MRR@10 0 (it was 1.0)."""
    import torch

    import defsentflow.evaluation.wordpred as wordpred
    from tests.evaluation.test_unseen_protocol import _word_rows

    real = wordpred._word_head

    def flat_head(source, device):
        head, tokenizer, kind = real(source, device)
        return (lambda h: torch.zeros(h.shape[0], len(tokenizer))), tokenizer, kind

    monkeypatch.setattr(wordpred, "_word_head", flat_head)
    rows = _word_rows()
    table = pa.table({k: [r[i] for r in rows] for i, k in enumerate(("entry", "definition", "split"))})
    res = wordpred.evaluate_wordpred(str(tiny_mlm_dir), table, split="test", pooling="mean", device="cpu")
    m = res["metrics"]
    assert res["ties"] == "pessimistic" and m["mrr@10"] == 0.0 and m["n_tied"] == res["n_queries"] > 0
    assert {r["task"] for r in res["rows"]} == {"wordpred"}
    mid = wordpred.evaluate_wordpred(str(tiny_mlm_dir), table, split="test", pooling="mean", device="cpu", ties="mid")
    assert {r["task"] for r in mid["rows"]} == {"wordpred+tiesmid"}  # another rule: another figure


def test_mid_ties_give_the_expected_figures_under_a_random_order_of_the_tied():
    """Every figure under ``mid`` is the mean over the places the gold may take among its equals (the
    obvious enumeration), not the figure of the middle place: on an 8-candidate toy where the gold ties
    with 7 others, MRR (1 + 1/2 + ... + 1/8) / 8 = 0.340, against 1 / 4.5 = 0.222 at the middle rank."""
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 3, size=(60, 25)).astype(float)   # many ties, some beyond rank 10
    gold = rng.integers(0, 25, size=60)
    ranks, tied = gold_ranks(scores, gold, "mid")
    m = rank_metrics(ranks, tied, "mid")
    places = []
    for row, g in zip(scores, gold):
        higher = int((row > row[g]).sum())
        equal = int((row == row[g]).sum()) - 1
        places.append(np.arange(higher + 1, higher + equal + 2, dtype=float))
    want = {"mrr": np.mean([np.mean(1 / p) for p in places]),
            "mrr@10": np.mean([np.mean(np.where(p <= 10, 1 / p, 0.0)) for p in places]),
            **{f"top{k}": np.mean([np.mean(p <= k) for p in places]) for k in (1, 3, 10)}}
    for key, value in want.items():
        assert m[key] == pytest.approx(value, rel=1e-9), key
    assert m["mrr"] > rank_metrics(ranks, tied)["mrr"]   # the middle place's 1/r understates it
    flat = rank_metrics(*gold_ranks(np.zeros((1, 8)), np.array([3]), "mid"), "mid")
    assert flat["mrr"] == pytest.approx(sum(1 / k for k in range(1, 9)) / 8) and flat["top1"] == pytest.approx(1 / 8)
    # without ties, mid is every other rule
    clean = np.arange(20.0)[None, :].repeat(3, axis=0)
    assert rank_metrics(*gold_ranks(clean, np.array([19, 5, 0]), "mid"), "mid") == \
        pytest.approx(rank_metrics(*gold_ranks(clean, np.array([19, 5, 0]))), rel=1e-12)
