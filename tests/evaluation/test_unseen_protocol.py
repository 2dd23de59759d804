"""Trustworthy reverse-dictionary and word-prediction figures: unseen queries, splits by gloss,
the training-time ICA space, DefSent's word prediction."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.dictionary.split import split_rows
from defsentflow.evaluation.ranks import gold_ranks
from defsentflow.evaluation.revdict import evaluate_revdict, evaluate_revdict_runs, prepare_queries, trained_texts
from defsentflow.evaluation.wordpred import evaluate_wordpred


def _table(rows):
    return pa.table({"entry": [r[0] for r in rows], "definition": [r[1] for r in rows], "split": [r[2] for r in rows]})


# A synset's gloss shared by two lemmas: "automobile" (train) and "car" (test), as a split by entry leaves it.
SHARED = "a motor vehicle with four wheels"
ROWS = [
    ("automobile", SHARED, "train"), ("automobile", "a thing people drive to work", "train"),
    ("car", "A motor  vehicle with four WHEELS", "test"), ("car", "the part of a train where people sit", "test"),
    ("cat", "a small animal with soft fur", "test"), ("cat", "a pet that catches mice", "test"),
    ("dog", "an animal that barks", "dev"), ("dog", "a pet that guards the house", "dev"),
    ("sea", "salt water", "train"), ("sea", "a large body of water", "train"),
]


def test_a_test_definition_also_in_train_is_excluded_and_counted():
    table = _table(ROWS)
    seen = trained_texts(table)
    unseen = prepare_queries(table, split="test", exclude=seen)
    papers = prepare_queries(table, split="test", protocol="multi-definition")
    # "car"'s first definition is the train gloss of "automobile" up to case and spacing: excluded
    assert "A motor  vehicle with four WHEELS" in papers.query_texts
    assert "A motor  vehicle with four WHEELS" not in unseen.query_texts
    assert unseen.n_excluded == 1 and len(unseen.query_rows) == len(papers.query_rows) - 1
    assert papers.n_excluded == 0


def test_evaluate_reports_both_protocols_with_their_counts(tiny_bert_dir, tmp_path):
    res = evaluate_revdict_runs(str(tiny_bert_dir), _table(ROWS), runs=[("test", "unseen"), ("test", "multi-definition"),
                                                                         ("dev", "unseen")],
                                modes=("cosine",), pooling="mean", device="cpu")
    unseen, papers, dev = res
    assert (unseen["n_queries"], unseen["n_excluded"]) == (3, 1)
    assert (papers["n_queries"], papers["n_excluded"]) == (4, 0)
    assert {r["task"] for r in unseen["rows"]} == {"revdict"}
    assert {r["task"] for r in papers["rows"]} == {"revdict-multidef"}
    assert {r["task"] for r in dev["rows"]} == {"revdict-dev"}
    assert all(r["n"] == 3 and r["n_excluded"] == 1 for r in unseen["rows"])
    # a model trained on every split has no unseen queries: a clear error, not a figure
    everywhere = tmp_path / "trained-everywhere"  # its record says it trained on every split
    shutil.copytree(tiny_bert_dir, everywhere)
    (everywhere / "defsentflow.json").write_text(json.dumps({"train_splits": ["train", "dev", "test"]}))
    with pytest.raises(ValueError, match="no reverse-dictionary queries.*excluded"):
        evaluate_revdict(str(everywhere), _table(ROWS), modes=("cosine",), device="cpu")


def test_metrics_keep_the_excluded_count(home):
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.record_metrics("m", [{"task": "revdict", "setting": "cosine", "metric": "mrr", "value": 0.5, "n": 3,
                              "n_excluded": 1}])
    assert cat.query("SELECT n, n_excluded FROM metrics WHERE model_id = 'm'") == [{"n": 3, "n_excluded": 1}]


def test_split_by_gloss_keeps_every_gloss_in_one_split():
    rng = np.random.default_rng(0)
    glosses = [f"gloss number {i}" for i in range(300)]
    entries, defs = [], []
    for i in range(2000):  # lemmas sharing synset glosses, with case and spacing variants
        g = glosses[int(rng.integers(len(glosses)))]
        entries.append(f"w{i % 700}")
        defs.append(g.upper() if i % 3 == 0 else g.replace(" ", "  "))
    by_gloss = split_rows(entries, defs, "gloss")
    split_of: dict[str, set[str]] = {}
    for d, s in zip(defs, by_gloss):
        split_of.setdefault(" ".join(d.split()).casefold(), set()).add(s)
    assert all(len(s) == 1 for s in split_of.values())
    assert {s for v in split_of.values() for s in v} == {"train", "dev", "test"}
    train = {" ".join(d.split()).casefold() for d, s in zip(defs, by_gloss) if s == "train"}
    test = {" ".join(d.split()).casefold() for d, s in zip(defs, by_gloss) if s == "test"}
    assert not train & test
    by_entry = split_rows(entries, defs, "entry")
    per_entry: dict[str, set[str]] = {}
    for e, s in zip(entries, by_entry):
        per_entry.setdefault(e, set()).add(s)
    assert all(len(s) == 1 for s in per_entry.values())
    with pytest.raises(ValueError, match="split_by must be one of"):
        split_rows(entries, defs, "synset")


def test_split_by_default_keeps_the_artifact_key():
    from defsentflow.dictionary.config import DictionaryConfig, SourceSpec

    src = (SourceSpec(kind="tsv", paths=("a.tsv",)),)
    assert "split_by" not in DictionaryConfig(name="d", sources=src).key_fields()
    assert DictionaryConfig(name="d", sources=src, split_by="gloss").key_fields()["split_by"] == "gloss"
    with pytest.raises(ValueError, match="split_by"):
        DictionaryConfig(name="d", sources=src, split_by="synset")


def test_ica_fitted_in_training_is_saved_and_reused_never_refit(tmp_path, tiny_bert_dir, monkeypatch):
    from sklearn.decomposition import FastICA

    from defsentflow.model.ica import IcaTransform

    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((80, 32)) @ rng.standard_normal((32, 32))
    from sklearn.preprocessing import StandardScaler

    ica = IcaTransform.fit(matrix)  # the DefSent+ reference: standardise, FastICA, x 100
    scaled = StandardScaler().fit_transform(matrix)
    ref = FastICA(n_components=32, max_iter=1000, random_state=42, whiten="unit-variance").fit_transform(scaled) * 100
    assert np.allclose(ica(matrix), ref, atol=1e-6)
    plain = FastICA(n_components=32, max_iter=1000, random_state=42, whiten="unit-variance").fit_transform(matrix) * 100
    assert np.allclose(IcaTransform.fit(matrix, standardize=False)(matrix), plain, atol=1e-6)
    mdir = tmp_path / "matrix"
    from defsentflow.model.entry_matrix import EntryMatrix

    EntryMatrix(entries=[f"e{i}" for i in range(80)], matrix=ica(matrix).astype(np.float32), ica=ica).save(mdir)
    again = IcaTransform.load(mdir)
    assert np.array_equal(again(matrix[:5]), ica(matrix[:5]))

    trained = tmp_path / "trained"
    shutil.copytree(tiny_bert_dir, trained)
    meta = {"pooling": "mean", "use_pooler": False, "entry_encoder": str(tiny_bert_dir), "entry_encoding": "amp",
            "ica": True, "entry_matrix": str(mdir / "matrix.npy")}
    (trained / "defsentflow.json").write_text(json.dumps(meta))
    applied = []
    real_call = IcaTransform.__call__
    monkeypatch.setattr(IcaTransform, "__call__", lambda self, x: applied.append(len(x)) or real_call(self, x))
    monkeypatch.setattr(FastICA, "fit", lambda *a, **k: pytest.fail("evaluation refit ICA"))
    monkeypatch.setattr(FastICA, "fit_transform", lambda *a, **k: pytest.fail("evaluation refit ICA"))
    from tests.evaluation.test_revdict import _toy_rows

    rows = _toy_rows()
    rows = [(e, d, "test" if i % 2 else s) for i, (e, d, s) in enumerate(rows)]
    res = evaluate_revdict(str(trained), _table(rows), modes=("head",), device="cpu")
    assert res["ica"] and applied and 0 < res["modes"]["head"]["mrr"] <= 1
    (mdir / "ica.npz").unlink()
    with pytest.raises(ValueError, match="no saved ICA transform"):
        evaluate_revdict(str(trained), _table(rows), modes=("head",), device="cpu")


def _word_rows():
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))
    rng = np.random.default_rng(5)
    rows = []
    for i, w in enumerate(words[:60]):
        split = ("train", "train", "dev", "test")[i % 4]
        for _ in range(2):
            rows.append((w, " ".join(rng.choice(words, size=int(rng.integers(3, 7)))), split))
    rows += [("two words", "not a single token", "test"), ("two words", "nor this", "test")]
    return rows


def test_wordpred_through_the_mlm_head_equals_a_slow_loop(tiny_mlm_dir):
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM

    from defsentflow.model.query import sentence_head_vectors

    table = _table(_word_rows())
    res = evaluate_wordpred(str(tiny_mlm_dir), table, split="test", pooling="mean", device="cpu")
    assert res["head"] == "mlm_head" and res["n_untargeted"] == 2  # "two words" is no single token
    mlm = BertForMaskedLM.from_pretrained(str(tiny_mlm_dir)).eval()
    tok = AutoTokenizer.from_pretrained(str(tiny_mlm_dir))
    queries = [(e, d) for e, d, s in _word_rows() if s == "test" and len(tok.tokenize(e)) == 1]
    assert res["n_queries"] == len(queries)
    h = sentence_head_vectors(str(tiny_mlm_dir), [d for _, d in queries], "mean", False, device="cpu")
    with torch.inference_mode():
        logits = mlm.cls(torch.from_numpy(h)).numpy()
    targets = np.array([tok.convert_tokens_to_ids(e) for e, _ in queries])
    ranks = gold_ranks(logits, targets, "pessimistic")[0]
    assert res["metrics"]["mrr"] == pytest.approx(float(np.mean(1 / ranks)), rel=1e-5)
    assert res["metrics"]["top10"] == pytest.approx(float(np.mean(ranks <= 10)))
    assert {r["task"] for r in res["rows"]} == {"wordpred"}


def test_wordpred_over_a_trained_entry_matrix(tmp_path, tiny_bert_dir):
    import shutil

    import pyarrow.parquet as pq

    from defsentflow.model.query import sentence_head_vectors

    rows = _word_rows()
    names = sorted({e for e, _, _ in rows})
    rng = np.random.default_rng(2)
    matrix = rng.standard_normal((len(names), 32)).astype(np.float32)
    mdir = tmp_path / "m"
    mdir.mkdir()
    np.save(mdir / "matrix.npy", matrix)
    pq.write_table(pa.table({"entry": names}), mdir / "entries.parquet")
    trained = tmp_path / "dsp"
    shutil.copytree(tiny_bert_dir, trained)
    (trained / "defsentflow.json").write_text(json.dumps({"pooling": "mean", "use_pooler": False,
                                                          "decoder": "entry_matrix",
                                                          "entry_matrix": str(mdir / "matrix.npy")}))
    res = evaluate_wordpred(str(trained), _table(rows), split="test", protocol="all-definitions", device="cpu")
    queries = [(e, d) for e, d, s in rows if s == "test"]
    h = sentence_head_vectors(str(trained), [d for _, d in queries], "mean", False, device="cpu")
    ranks = gold_ranks(h @ matrix.T, np.array([names.index(e) for e, _ in queries]), "pessimistic")[0]
    assert res["head"] == "entry_matrix" and res["n_queries"] == len(queries)
    assert res["metrics"]["mrr"] == pytest.approx(float(np.mean(1 / ranks)), rel=1e-5)
    assert {r["task"] for r in res["rows"]} == {"wordpred-alldefs"}
