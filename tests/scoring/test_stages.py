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
    assert cfg.contexts.set_size == 50 and cfg.pairs.n_pairs == 20000


def test_missing_corpus_source_is_an_error(tmp_path, tiny_bert_dir, home):
    cfg = harvest_config(tmp_path / "nope", tiny_bert_dir, home)
    with pytest.raises(FileNotFoundError, match="corpus.paths"):
        run_harvest(cfg)
    assert not list((home / "parquet").glob("harvest/*")) if (home / "parquet").exists() else True
