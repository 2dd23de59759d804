from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from defsentflow.scoring.config import load_harvest_config
from defsentflow.scoring.stages import run_harvest
from defsentflow.storage import Catalog
from tests.scoring.helpers import harvest_config, write_text_corpus


@pytest.fixture()
def corpus_dir(tmp_path):
    return write_text_corpus(tmp_path / "corpus")


def test_run_harvest_end_to_end_and_cached(corpus_dir, tiny_bert_dir, home):
    cfg = harvest_config(corpus_dir, tiny_bert_dir, home)
    res = run_harvest(cfg, run_id="r1")
    assert res["n_pairs"] == 40 and res["batches_computed"] == res["batches_computed"] > 0
    t = pq.read_table(res["path"])
    assert t.num_rows == 40 and set(t.column("kind").to_pylist()) <= {"neighbour", "random"}
    assert np.isfinite(t.column("score").to_numpy()).all()
    cat = Catalog(home)
    stats = cat.query("SELECT * FROM harvest_stats WHERE artifact_key = ?", [res["key"]])[0]
    assert stats["n_pairs"] == 40 and stats["run_id"] == "r1"
    assert stats["mean"] == pytest.approx(float(np.mean(t.column("score").to_numpy())), rel=1e-5)
    hist = json.loads(stats["histogram"])
    assert sum(hist["counts"]) == 40
    assert cat.artifact(res["key"])["kind"] == "pairs"
    assert cat.artifact(res["refs"]["scorer"]["key"])["kind"] == "scorer"
    assert 0.0 <= res["scorer_metrics"]["heldout_accuracy"] <= 1.0

    again = run_harvest(cfg)
    assert again["cached"] and again["key"] == res["key"] and again["batches_computed"] == 0


def test_surrogate_is_registered(corpus_dir, tiny_bert_dir, home):
    from sentence_transformers import SentenceTransformer

    from defsentflow.training.surrogate import run_surrogate_config

    cfg = harvest_config(corpus_dir, tiny_bert_dir, home)
    res = run_surrogate_config(cfg, run_id="s1")
    rows = Catalog(home).query("SELECT * FROM models WHERE model_id = ?", [res["model_id"]])
    assert rows and rows[0]["method"] == "surrogate" and rows[0]["pooling"] == "mean"
    assert SentenceTransformer(rows[0]["path"], device="cpu").encode(["a small cat"]).shape == (1, 32)
    assert run_surrogate_config(cfg)["cached"]


def test_config_errors_name_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("corpus: {name: bbc}\ncontexts: {set_sise: 5}\n")
    with pytest.raises(ValueError, match=r"contexts\.set_sise"):
        load_harvest_config(bad)
    bad.write_text("corpus: {name: bbc}\nretrieval: {kind: bm26}\n")
    with pytest.raises(ValueError, match=r"retrieval\.kind"):
        load_harvest_config(bad)
    bad.write_text("corpus: {name: bbc}\nretrieval: {top_n: 10}\ncontexts: {set_size: 50}\n")
    with pytest.raises(ValueError, match="top_n"):
        load_harvest_config(bad)
    bad.write_text("corpus: {name: bbc}\nscorer: {weights: {l2: 1.0}}\n")
    with pytest.raises(ValueError, match="lm"):
        load_harvest_config(bad)
    with pytest.raises(FileNotFoundError):
        load_harvest_config(tmp_path / "missing.yaml")


def test_bbc_config_is_valid():
    from defsentflow.storage import repo_root

    cfg = load_harvest_config(repo_root() / "configs" / "harvest-bbc.yaml")
    assert cfg.contexts.set_size == 500 and cfg.retrieval.top_n >= 500 and cfg.pairs.n_pairs == 20000


def test_missing_corpus_source_is_an_error(tmp_path, tiny_bert_dir, home):
    cfg = harvest_config(tmp_path / "nope", tiny_bert_dir, home)
    with pytest.raises(FileNotFoundError, match="corpus.paths"):
        run_harvest(cfg)
    assert not list((home / "parquet").glob("harvest/*")) if (home / "parquet").exists() else True


def test_extra_sentences_join_the_pool(corpus_dir, tiny_bert_dir, home, tmp_path):
    from defsentflow.scoring.stages import _all_texts, load_resources, plan_harvest, prepare_corpus, prepare_extras

    extra = tmp_path / "defs.txt"
    extra.write_text("a small animal that lives in a house\n\n  the liquid that fish live in  \n")
    cfg = harvest_config(corpus_dir, tiny_bert_dir, home, pairs={"extra_sentences": str(extra)})
    res = run_harvest(cfg)
    corpus, extras = prepare_corpus(cfg), prepare_extras(cfg)
    texts = _all_texts(corpus, extras)
    n = len(texts) - 2
    assert texts[n:] == ["a small animal that lives in a house", "the liquid that fish live in"]
    resources = load_resources(cfg, res["refs"])
    assert resources.vectors.shape[0] == len(texts) and (resources.doc_of[n:] == -1).all()
    t = pq.read_table(res["path"])
    for col, ids in (("s1", "s1_id"), ("s2", "s2_id")):
        for text, i in zip(t.column(col).to_pylist(), t.column(ids).to_pylist()):
            assert texts[i] == text
    assert plan_harvest(cfg, res["refs"])["key"] != run_harvest(harvest_config(corpus_dir, tiny_bert_dir, home))["key"]

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\n\xff broken\n")
    with pytest.raises(ValueError, match="line 2"):
        run_harvest(harvest_config(corpus_dir, tiny_bert_dir, home, pairs={"extra_sentences": str(bad)}))


def test_cli_harvest(corpus_dir, tiny_bert_dir, home, tmp_path, capsys):
    import yaml

    from defsentflow.cli import main

    cfg = harvest_config(corpus_dir, tiny_bert_dir, home)
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    assert main(["--quiet", "harvest", str(path), "--run-id", "cli1"]) == 0
    out = capsys.readouterr().out
    assert "pairs:" in out and "held-out accuracy" in out and "40" in out
    assert Catalog(home).query("SELECT status FROM runs WHERE run_id = 'cli1'")[0]["status"] == "completed"
    assert main(["harvest", str(tmp_path / "missing.yaml")]) == 2


def test_generative_terms_in_a_harvest(corpus_dir, tiny_bert_dir, tiny_gpt2_dir, home):
    plain = run_harvest(harvest_config(corpus_dir, tiny_bert_dir, home))
    scorer = {"weights": {"l1": 1.0, "l2": 0.5, "l3": 0.25, "l4": 0.25}, "lm": str(tiny_gpt2_dir), "lm_batch_size": 64,
              "discriminative": {"encoder": str(tiny_bert_dir), "hidden": 16, "epochs": 1, "heldout_share": 0.2}}
    mixed = run_harvest(harvest_config(corpus_dir, tiny_bert_dir, home, scorer=scorer))
    assert mixed["key"] != plain["key"]
    a, b = pq.read_table(plain["path"]), pq.read_table(mixed["path"])
    assert b.column("scorer_version")[0].as_py() != a.column("scorer_version")[0].as_py()
    assert np.isfinite(b.column("score").to_numpy()).all()
    # the same pairs (choosing them does not use the scorer), different labels
    assert a.column("s1_id").equals(b.column("s1_id")) and a.column("s2_id").equals(b.column("s2_id"))
    assert not np.allclose(a.column("score").to_numpy(), b.column("score").to_numpy())
