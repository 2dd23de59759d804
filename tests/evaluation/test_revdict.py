"""Reverse dictionary: leave-one-out ranks and metrics against slow obvious loops."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.evaluation.ranks import rank_metrics
from defsentflow.evaluation.revdict import (
    candidate_set,
    entry_sums,
    evaluate_revdict,
    prepare_queries,
    revdict_ranks,
    trained_texts,
)
from defsentflow.model import model_head


def _random_dictionary(rng: np.random.Generator, n_entries: int = 40, dim: int = 8):
    counts = rng.integers(1, 5, size=n_entries)
    def_entry = np.repeat(np.arange(n_entries), counts)
    rng.shuffle(def_entry)
    vecs = rng.normal(size=(len(def_entry), dim))
    return vecs, def_entry, counts


def _slow_ranks(query_vecs, query_rows, def_vecs, def_entry, n_entries, *, cosine, transform=None):
    """For each query, rebuild every entry vector from its definitions, skipping the query itself."""
    ranks = []
    for q, row in zip(query_vecs, query_rows):
        own = def_entry[row]
        scores = []
        for e in range(n_entries):
            members = [i for i in range(len(def_entry)) if def_entry[i] == e and not (e == own and i == row)]
            v = np.mean([def_vecs[i] for i in members], axis=0)
            if transform is not None:
                v = transform(v[None])[0]
            qq = q
            if cosine:
                v = v / np.linalg.norm(v)
                qq = q / np.linalg.norm(q)
            scores.append(float(np.dot(qq, v)))
        ranks.append(1 + sum(s > scores[own] for s in scores))
    return np.array(ranks)


@pytest.mark.parametrize("cosine", [True, False])
def test_ranks_equal_slow_loop(cosine):
    rng = np.random.default_rng(0)
    vecs, def_entry, counts = _random_dictionary(rng)
    rows = np.array([i for i in range(len(def_entry)) if counts[def_entry[i]] >= 2])
    # Query vectors differ from the definition vectors (as in head mode), plus the cosine-mode case
    # where the query is its own definition vector.
    q = vecs[rows] + 0.3 * rng.normal(size=(len(rows), vecs.shape[1]))
    fast = revdict_ranks(q, rows, vecs, def_entry, len(counts), cosine=cosine, chunk=7)
    slow = _slow_ranks(q, rows, vecs, def_entry, len(counts), cosine=cosine)
    np.testing.assert_array_equal(fast, slow)
    own = revdict_ranks(vecs[rows], rows, vecs, def_entry, len(counts), cosine=cosine)
    np.testing.assert_array_equal(own, _slow_ranks(vecs[rows], rows, vecs, def_entry, len(counts), cosine=cosine))


def test_ranks_with_affine_transform_equal_slow_loop():
    rng = np.random.default_rng(1)
    vecs, def_entry, counts = _random_dictionary(rng, n_entries=25)
    rows = np.array([i for i in range(len(def_entry)) if counts[def_entry[i]] >= 2])
    a, b = rng.normal(size=(8, 5)), rng.normal(size=5)
    transform = lambda x: x @ a + b  # noqa: E731 - an affine map like ICA's transform
    q = rng.normal(size=(len(rows), 5))
    fast = revdict_ranks(q, rows, vecs, def_entry, len(counts), cosine=False, transform=transform)
    np.testing.assert_array_equal(fast, _slow_ranks(q, rows, vecs, def_entry, len(counts), cosine=False,
                                                    transform=transform))


def test_query_never_contributes_to_its_own_entry():
    # Entry 0 = {query q, x}; q is far out along axis 0, so an entry vector containing q would win.
    def_vecs = np.array([[10.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    def_entry = np.array([0, 0, 1, 1])
    ranks = revdict_ranks(def_vecs[[0]], np.array([0]), def_vecs, def_entry, 2, cosine=True)
    assert ranks.tolist() == [2]  # with leakage it would be 1
    with pytest.raises(ValueError, match="single definition"):
        revdict_ranks(def_vecs[[0]], np.array([0]), def_vecs, np.array([0, 1, 2, 2]), 3, cosine=True)


def test_entry_sums_and_metrics():
    rng = np.random.default_rng(2)
    vecs, def_entry, counts = _random_dictionary(rng, n_entries=10)
    sums, c = entry_sums(vecs, def_entry, 10)
    for e in range(10):
        np.testing.assert_allclose(sums[e], vecs[def_entry == e].sum(0))
    np.testing.assert_array_equal(c, counts)
    ranks = rng.integers(1, 30, size=200)
    m = rank_metrics(ranks)
    assert m["mrr"] == pytest.approx(sum(1.0 / r for r in ranks) / len(ranks))
    for k in (1, 3, 10):
        assert m[f"top{k}"] == pytest.approx(sum(r <= k for r in ranks) / len(ranks))


def _table(rows):
    return pa.table({"entry": [r[0] for r in rows], "definition": [r[1] for r in rows], "split": [r[2] for r in rows]})


def test_prepare_queries_rules():
    rows = [("cat", "a small animal", "test"), ("cat", "a pet that lives in a house", "test"),
            ("dog", "an animal", "test"), ("car", "a road vehicle", "train"), ("car", "a thing to drive", "train"),
            ("sea", "salt water", "dev"), ("sea", "a large water", "dev"), ("sea", "where fish live", "dev")]
    t = _table(rows)
    q = prepare_queries(t, split="test", exclude=set())
    assert q.entries == ["car", "cat", "dog", "sea"]
    assert sorted(q.query_texts) == ["a pet that lives in a house", "a small animal"]  # dog has one definition
    assert prepare_queries(t, split="test", candidates="split", exclude=set()).entries == ["cat", "dog"]
    assert candidate_set(t, split="dev").entries == ["car", "sea"]  # a dev figure never reads test rows
    assert len(candidate_set(t, split="dev").query_rows) == 0
    dev = prepare_queries(t, split="dev", max_queries=2, exclude=set())
    assert len(dev.query_rows) == 2 and dev.query_rows.tolist() == prepare_queries(
        t, split="dev", max_queries=2, exclude=set()).query_rows.tolist()
    # multi-definition is every definition: no cap
    assert len(prepare_queries(t, split="dev", protocol="multi-definition", max_queries=2).query_rows) == 3
    # Adding unrelated entries does not change which queries are chosen among the old ones.
    more = prepare_queries(_table(rows + [("ant", "an insect", "train"), ("ant", "a small insect", "train")]),
                           split="dev", max_queries=2, exclude=set())
    assert sorted(more.query_texts) == sorted(dev.query_texts)
    with pytest.raises(ValueError, match="needs the texts the model trained on"):
        prepare_queries(t, split="test")
    with pytest.raises(ValueError, match="word prediction's"):
        prepare_queries(t, split="test", protocol="all-definitions")


def _toy_rows():
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))
    rng = np.random.default_rng(3)
    rows = []
    for i, w in enumerate(words[20:60]):
        split = "test" if i % 4 == 0 else "train"
        for _ in range(1 + (i % 3)):
            rows.append((w, " ".join(rng.choice(words, size=int(rng.integers(3, 8)))), split))
    return rows


def test_hybrid_ranks_equal_slow_loop():
    """hybrid: each entry's vector is unit(mean of its other definitions) + unit(its headword vector)."""
    rng = np.random.default_rng(2)
    vecs, def_entry, counts = _random_dictionary(rng, n_entries=30)
    words = rng.normal(size=(len(counts), vecs.shape[1]))
    rows = np.array([i for i in range(len(def_entry)) if counts[def_entry[i]] >= 2])
    q = vecs[rows]
    unit = lambda x: x / np.linalg.norm(x)  # noqa: E731
    slow = []
    for qv, row in zip(q, rows):
        own = def_entry[row]
        scores = [float(np.dot(unit(qv), unit(unit(np.mean([vecs[i] for i in range(len(def_entry))
                                                            if def_entry[i] == e and not (e == own and i == row)],
                                                           axis=0)) + unit(words[e]))))
                  for e in range(len(counts))]
        slow.append(1 + sum(x > scores[own] for x in scores))
    fast = revdict_ranks(q, rows, vecs, def_entry, len(counts), cosine=True, entry_vecs=words, chunk=5)
    np.testing.assert_array_equal(fast, np.array(slow))
    with pytest.raises(ValueError, match="needs cosine"):
        revdict_ranks(q, rows, vecs, def_entry, len(counts), cosine=False, entry_vecs=words)


def test_evaluate_revdict_hybrid_uses_the_headwords(tiny_bert_dir):
    from defsentflow.encoders import encode_texts, load_encoder

    table = _table(_toy_rows())
    res = evaluate_revdict(str(tiny_bert_dir), table, split="test", modes=("cosine", "hybrid"), pooling="mean",
                           device="cpu")
    q = prepare_queries(table, split="test", exclude=trained_texts(table))
    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    vecs = encode_texts(enc, q.definitions, pooling="mean", max_length=64)
    words = encode_texts(enc, [e.replace("_", " ") for e in q.entries], pooling="mean", max_length=64)
    ranks = revdict_ranks(vecs[q.query_rows], q.query_rows, vecs, q.def_entry, len(q.entries), cosine=True,
                          entry_vecs=words)
    assert res["modes"]["hybrid"]["mrr"] == pytest.approx(rank_metrics(ranks)["mrr"])
    assert {r["setting"] for r in res["rows"]} == {"cosine", "hybrid"}
    with pytest.raises(ValueError, match="modes must be a non-empty subset"):
        evaluate_revdict(str(tiny_bert_dir), table, modes=("words",), device="cpu")


def test_evaluate_revdict_cosine_equals_slow_reencoding(tiny_bert_dir):
    """End to end: the fast path equals re-encoding and re-averaging per query."""
    from defsentflow.encoders import encode_texts, load_encoder

    table = _table(_toy_rows())
    res = evaluate_revdict(str(tiny_bert_dir), table, split="test", modes=("cosine",), pooling="mean", device="cpu")
    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    q = prepare_queries(table, split="test", exclude=trained_texts(table))
    # Each definition encoded alone (no batching, padding or de-duplication).
    single = [encode_texts(enc, [d], pooling="mean", max_length=64)[0] for d in q.definitions]
    ranks = []
    for row in q.query_rows:
        qv, own = single[row], q.def_entry[row]
        scores = []
        for e in range(len(q.entries)):
            v = np.mean([single[i] for i in range(len(q.definitions)) if q.def_entry[i] == e and i != row], axis=0)
            scores.append(np.dot(qv, v) / np.linalg.norm(qv) / np.linalg.norm(v))
        ranks.append(1 + sum(s > scores[own] + 1e-6 for s in scores))
    expected = rank_metrics(np.array(ranks))
    assert res["n_queries"] == len(q.query_rows) > 0
    for k, v in expected.items():
        assert res["modes"]["cosine"][k] == pytest.approx(v)
    rows = {(r["setting"], r["metric"]): r["value"] for r in res["rows"]}
    assert rows[("cosine", "mrr")] == pytest.approx(expected["mrr"])
    assert all(r["task"] == "revdict" for r in res["rows"])


def test_evaluate_revdict_head_mode_equals_slow_loop(tiny_bert_dir, tiny_mlm_dir):
    """Head mode: the model's pooler output (asked for: a bare checkpoint's head uses no pooler,
    tests/model/test_head.py) against entries built by another (entry) encoder."""
    from defsentflow.encoders import encode_texts, load_encoder
    from defsentflow.model.query import sentence_head_vectors

    table = _table(_toy_rows())
    head = dataclasses.replace(model_head(str(tiny_bert_dir), pooling="cls", use_pooler=True, entry_encoding="amp"),
                               entry_encoder=str(tiny_mlm_dir))
    res = evaluate_revdict(str(tiny_bert_dir), table, split="test", modes=("head",), pooling="cls", head=head,
                           device="cpu")
    assert res["entry_encoding"] == "amp" and res["pooling"] == "cls" and res["use_pooler"] is True
    q = prepare_queries(table, split="test", exclude=trained_texts(table))
    ent = load_encoder(str(tiny_mlm_dir), device="cpu")
    single = [encode_texts(ent, [d], pooling="mean", max_length=64)[0] for d in q.definitions]
    heads = sentence_head_vectors(str(tiny_bert_dir), q.query_texts, "cls", True, device="cpu")
    ranks = []
    for h, row in zip(heads, q.query_rows):
        own = q.def_entry[row]
        scores = [np.dot(h, np.mean([single[i] for i in range(len(single)) if q.def_entry[i] == e and i != row], 0))
                  for e in range(len(q.entries))]
        ranks.append(1 + sum(sc > scores[own] + 1e-6 for sc in scores))
    for k, v in rank_metrics(np.array(ranks)).items():
        assert res["modes"]["head"][k] == pytest.approx(v)
