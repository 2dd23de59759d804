from __future__ import annotations

import numpy as np
import pytest

from defsentflow.corpus import ingest_corpus, load_chunks
from defsentflow.retrieval import Bm25Index, DenseIndex, build_index, load_index


@pytest.fixture()
def corpus(home, tmp_path):
    d = tmp_path / "src"
    d.mkdir()
    (d / "a.txt").write_text("Oil prices rose sharply. Markets fell.\n\nThe central bank held rates.\n")
    (d / "b.txt").write_text("The football club won the cup. Fans celebrated.\n\nThe striker scored twice.\n")
    return ingest_corpus([d], "news", workers=1)


def test_built_once_then_cached(corpus):
    first = build_index("bm25", "news")
    assert not first.cached and first.documents == corpus.chunks and first.corpus_key == corpus.key
    stamp = sorted((p.name, p.stat().st_mtime_ns) for p in first.path.iterdir())
    again = build_index("bm25", corpus.key)
    assert again.cached and again.key == first.key
    assert sorted((p.name, p.stat().st_mtime_ns) for p in again.path.iterdir()) == stamp
    index = load_index(first.key)
    assert isinstance(index, Bm25Index)
    ids, _ = index.search(["football cup"], top_n=1)
    chunks = load_chunks("news").to_pylist()
    assert "football" in chunks[ids[0, 0]]["text"]
    assert build_index("tfidf", "news").key != first.key


def test_dense_needs_encoder_id(corpus):
    enc = lambda texts: np.array([[t.count("o"), t.count("e"), 1.0] for t in texts], np.float32)  # noqa: E731
    with pytest.raises(ValueError, match="encoder_id"):
        build_index("dense", "news", encoder=enc)
    art = build_index("dense", "news", encoder=enc, encoder_id="toy-v1")
    assert isinstance(art.load(enc), DenseIndex) and art.load(enc).search(["oo"], 2)[0].shape == (1, 2)
    assert build_index("dense", "news", encoder=enc, encoder_id="toy-v1").cached


def test_bad_kind_and_unknown_corpus(home):
    with pytest.raises(ValueError, match="valid: bm25, tfidf, dense"):
        build_index("lsi", "news")
    with pytest.raises(LookupError, match="ingest"):
        build_index("bm25", "nothing")
