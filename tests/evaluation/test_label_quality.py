"""Label quality (Origin) end to end on a tiny corpus and tiny STS files, and its baselines."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from defsentflow.evaluation.baselines import tfidf_similarities, word_vector_average
from defsentflow.evaluation.label_quality import record_label_quality, run_label_quality
from defsentflow.evaluation.sts_data import load_task
from defsentflow.scoring.origin import OriginPoint
from defsentflow.storage import Catalog
from tests.scoring.helpers import harvest_config, write_text_corpus

POINTS = [OriginPoint(2, "diverse", 6), OriginPoint(4, "diverse", 6), OriginPoint(4, "top", 6), OriginPoint(4, "random", 6)]


def test_tfidf_similarities_match_sklearn():
    a = ["the cat sat", "a dog ran far", "zzz"]
    b = ["the cat sat down", "dogs run", "the cat"]
    fit = a + b + ["the end"]
    m = TfidfVectorizer().fit(fit)
    want = [cosine_similarity(m.transform([x]), m.transform([y]))[0, 0] for x, y in zip(a, b)]
    np.testing.assert_allclose(tfidf_similarities(a, b, fit), want, atol=1e-12)
    with pytest.raises(ValueError, match="first sentences"):
        tfidf_similarities(a, b[:2], fit)


def test_word_vector_average_is_the_mean_input_embedding(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    texts = ["the cat is small", "a dog", ""]
    got = word_vector_average(tiny_bert_dir, texts, batch_size=2)
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    table = AutoModel.from_pretrained(tiny_bert_dir).get_input_embeddings().weight.detach().numpy()
    for text, row in zip(texts, got):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        want = table[ids].mean(0) if ids else np.zeros(table.shape[1])
        np.testing.assert_allclose(row, want, rtol=1e-5, atol=1e-6)


def test_run_label_quality_rows_and_catalog(tmp_path, tiny_bert_dir, home, sts_data_dir):
    corpus = write_text_corpus(tmp_path / "corpus", n_docs=14)
    cfg = harvest_config(corpus, tiny_bert_dir, home)
    result = run_label_quality(cfg, tasks="stsb-dev,sts13", data_dir=sts_data_dir, points=POINTS, run_id="lq1")
    methods = [m["method"] for m in result.models]
    assert methods == ["origin"] * 4 + ["tfidf", "word_avg", "base"]
    assert len({m["model_id"] for m in result.models}) == 7
    by = {(r["model_id"], r["task"], r["setting"]): r for r in result.rows}
    dev = load_task(sts_data_dir, "stsb-dev")
    for m in result.models:
        row = by[(m["model_id"], "stsb-dev", "all")]
        assert row["n"] == dev.n and -100.0 <= row["value"] <= 100.0 and row["metric"] == "spearman"
        assert (m["model_id"], "sts13", "mean") in by  # a SemEval year has both settings
    # the TF-IDF row is Spearman x100 of the sklearn cosines against gold
    s = dev.subsets[0]
    want = 100 * spearmanr(tfidf_similarities(s.sentences1, s.sentences2, s.sentences1 + s.sentences2), s.scores)[0]
    assert by[("tfidf-cosine", "stsb-dev", "all")]["value"] == pytest.approx(want, abs=1e-9)
    # different context sets give different labels
    origin = [by[(m["model_id"], "stsb-dev", "all")]["value"] for m in result.models if m["method"] == "origin"]
    assert len(set(np.round(origin, 6))) > 1

    cat = Catalog(home)
    assert record_label_quality(cat, result, run_id="lq1") == len(result.rows)
    models = cat.query("SELECT model_id, method FROM models WHERE method = 'origin' ORDER BY model_id")
    assert len(models) == 4 and all(m["model_id"].startswith("origin-mini-bm25-") for m in models)
    stored = cat.query("SELECT value FROM metrics WHERE model_id = ? AND task = 'stsb-dev' AND setting = 'all'",
                       [models[0]["model_id"]])
    assert stored[0]["value"] == pytest.approx(by[(models[0]["model_id"], "stsb-dev", "all")]["value"])


def test_origin_cli(tmp_path, tiny_bert_dir, home, sts_data_dir, capsys):
    import yaml

    from defsentflow.cli import main

    corpus = write_text_corpus(tmp_path / "corpus", n_docs=14)
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(harvest_config(corpus, tiny_bert_dir, home).model_dump(mode="json")))
    rc = main(["--quiet", "origin", str(path), "--tasks", "stsb-dev", "--data-dir", str(sts_data_dir),
               "--set-sizes", "2,3", "--selections", "diverse,random", "--no-baselines", "--run-id", "o1"])
    out = capsys.readouterr().out
    assert rc == 0 and "origin diverse-c2-n6" in out and "origin random-c3-n6" in out
    cat = Catalog(home)
    assert len(cat.query("SELECT * FROM metrics WHERE task = 'stsb-dev' AND run_id = 'o1'")) == 4
    from defsentflow.report import build_report

    text = build_report("o1", catalog=cat, out_dir=tmp_path / "report", register=False).markdown
    assert "## Label quality (Origin)" in text and "origin random-c3-n6" in text
    assert main(["origin", str(path), "--selections", "best"]) == 2
    assert "valid: diverse, top, random" in capsys.readouterr().err
    assert main(["origin", str(path), "--tasks", "stsb-devv"]) == 2
    assert "unknown STS task" in capsys.readouterr().err
    assert [r["run_id"] for r in cat.query("SELECT run_id FROM runs")] == ["o1"]  # a typo records no run
