"""Spearman, cosine, the 'all' and 'mean' settings, the average row, and evaluate_sts end to end."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics.pairwise import cosine_similarity

from defsentflow.evaluation.metrics import paired_cosine, pearson, spearman
from defsentflow.evaluation.sts import SEVEN_TASKS, average_row, evaluate_sts, score_tasks
from defsentflow.evaluation.sts_data import StsSubset, StsTask, load_task


def test_spearman_equals_scipy_with_and_without_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.normal(size=50)
        y = x + rng.normal(size=50)
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
        xt, yt = np.round(x), np.round(y * 2) / 2  # many ties
        assert spearman(xt, yt) == pytest.approx(spearmanr(xt, yt).statistic, abs=1e-12)
    assert np.isnan(spearman(np.ones(5), np.arange(5)))
    assert np.isnan(pearson(np.ones(1), np.ones(1)))


def test_paired_cosine_equals_sklearn():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(30, 7)), rng.normal(size=(30, 7))
    np.testing.assert_allclose(paired_cosine(a, b), np.diag(cosine_similarity(a, b)), atol=1e-12)
    assert paired_cosine(np.zeros((1, 3)), np.ones((1, 3)))[0] == 0.0


def _task(rng, name, sizes):
    subs = []
    for j, n in enumerate(sizes):
        s1 = tuple(f"{name}-{j}-a{i}" for i in range(n))
        s2 = tuple(f"{name}-{j}-b{i}" for i in range(n))
        subs.append(StsSubset(f"sub{j}", s1, s2, rng.uniform(0, 5, n), f"/x/{name}-{j}"))
    return StsTask(name, tuple(subs))


def test_all_and_mean_settings_against_scipy():
    rng = np.random.default_rng(2)
    tasks = [_task(rng, "sts12", [15, 9, 20]), _task(rng, "stsb-dev", [25])]
    table: dict[str, np.ndarray] = {}
    calls = []

    def embed(texts):
        calls.append(len(texts))
        for t in texts:
            table.setdefault(t, rng.normal(size=6))
        return np.stack([table[t] for t in texts])

    rows = score_tasks(tasks, embed, pooling="mean", per_subset=True)
    assert calls == [2 * (15 + 9 + 20 + 25)]  # ONE encoding call for every task
    by = {(r["task"], r["setting"]): r for r in rows}

    def sims(sub):
        a = np.stack([table[t] for t in sub.sentences1])
        b = np.stack([table[t] for t in sub.sentences2])
        return np.diag(cosine_similarity(a, b))

    subs = tasks[0].subsets
    all_ref = 100 * spearmanr(np.concatenate([sims(s) for s in subs]), np.concatenate([s.scores for s in subs])).statistic
    per = [100 * spearmanr(sims(s), s.scores).statistic for s in subs]
    assert by[("sts12", "all")]["value"] == pytest.approx(all_ref, abs=1e-9)
    assert by[("sts12", "mean")]["value"] == pytest.approx(np.mean(per), abs=1e-9)
    assert by[("sts12", "all")]["n"] == 44
    assert [by[(f"sts12/sub{j}", "all")]["value"] for j in range(3)] == pytest.approx(per, abs=1e-9)
    stsb = tasks[1].subsets[0]
    assert by[("stsb-dev", "all")]["value"] == pytest.approx(100 * spearmanr(sims(stsb), stsb.scores).statistic)
    assert ("stsb-dev", "mean") not in by  # a single set has no separate mean


def test_average_row_is_labelled():
    rows = [{"task": t, "setting": "all", "metric": "spearman", "value": float(i), "pooling": "mean"}
            for i, t in enumerate(SEVEN_TASKS)]
    full = average_row(rows + [{"task": "stsb-dev", "setting": "all", "metric": "spearman", "value": 99.0}])
    assert full["label"] == "avg (7 tasks)" and full["value"] == pytest.approx(3.0) and full["n"] == 7
    part = average_row([r for r in rows if r["task"] in ("sts12", "sts14")])
    assert part["label"] == "avg of 2/7: sts12,sts14" and part["value"] == pytest.approx(1.0)
    assert average_row([{"task": "stsb-dev", "setting": "all", "metric": "spearman", "value": 1.0}]) is None


def test_evaluate_sts_with_a_tiny_model_matches_a_manual_computation(tiny_bert_dir, sts_data_dir):
    from defsentflow.encoders import encode_texts, load_encoder

    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    names = ["sts13", "stsb-dev", "sickr"]
    rows = evaluate_sts(enc, names, data_dir=sts_data_dir, pooling="cls")
    got = {(r["task"], r["setting"]): r["value"] for r in rows}
    assert set(got) == {("sts13", "all"), ("sts13", "mean"), ("stsb-dev", "all"), ("sickr", "all")}
    assert all(r["pooling"] == "cls" for r in rows)
    # A random tiny model puts every sentence at cosine ~0.99999, where float32 rounding (of a
    # batch's padding, or of cosines computed in float32) reorders pairs; so the reference takes
    # the vectors of one call over the same texts, in float64, and checks the pairing, the
    # concatenation and the Spearman with sklearn and scipy.
    tasks = [load_task(sts_data_dir, n) for n in names]
    texts = sorted({t for task in tasks for s in task.subsets for t in s.sentences1 + s.sentences2})
    vec = dict(zip(texts, encode_texts(enc, texts, pooling="cls", max_length=256).astype(np.float64)))
    for task in tasks:
        # one pair at a time: a matrix product may round a repeated pair differently by position
        sims = [np.array([cosine_similarity(vec[a][None], vec[b][None])[0, 0] for a, b in zip(s.sentences1, s.sentences2)])
                for s in task.subsets]
        ref = 100 * spearmanr(np.concatenate(sims), np.concatenate([s.scores for s in task.subsets])).statistic
        assert got[(task.name, "all")] == pytest.approx(ref, abs=1e-6)


def test_evaluate_sts_rejects_bad_pooling_and_tasks(sts_data_dir):
    with pytest.raises(ValueError, match="pooling must be one of"):
        evaluate_sts("unused", ["sts12"], data_dir=sts_data_dir, pooling="avg")
    with pytest.raises(ValueError, match="unknown STS task"):
        evaluate_sts("unused", ["sts99"], data_dir=sts_data_dir)
