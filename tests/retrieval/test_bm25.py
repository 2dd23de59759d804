from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from defsentflow.retrieval import Bm25Config, Bm25Index, rank_order, tokenize


def _reference(docs, queries, **kw):
    ref = BM25Okapi([tokenize(d) for d in docs], **kw)
    return np.array([ref.get_scores(tokenize(q)) for q in queries])


def test_scores_equal_rank_bm25(small_docs, small_queries):
    index = Bm25Index().build(small_docs)
    ref = _reference(small_docs, small_queries)
    assert np.allclose(index.scores(small_queries), ref, rtol=1e-12, atol=1e-12)
    assert sum("the" in tokenize(d) for d in small_docs) > len(small_docs) / 2  # a negative raw idf: the floor is used
    assert np.isclose(index.idf[index.vocab["the"]], 0.25 * index.average_idf)


def test_other_parameters_equal_rank_bm25(small_docs, small_queries):
    index = Bm25Index(Bm25Config(k1=0.9, b=0.4, epsilon=0.5)).build(small_docs)
    assert np.allclose(index.scores(small_queries), _reference(small_docs, small_queries, k1=0.9, b=0.4, epsilon=0.5))


def test_top10_lists_equal_rank_bm25(small_docs, small_queries):
    index = Bm25Index().build(small_docs)
    ids, scores = index.search(small_queries, top_n=10, batch_size=7)
    ref = _reference(small_docs, small_queries)
    for i, row in enumerate(ref):
        expected = rank_order(row)[:10]
        assert ids[i].tolist() == expected.tolist()
        assert np.allclose(scores[i], row[expected], rtol=1e-6)
    assert ids.dtype == np.int64 and scores.dtype == np.float32


def test_save_load_round_trip(tmp_path, small_docs, small_queries):
    index = Bm25Index().build(small_docs)
    index.save(tmp_path / "bm25")
    loaded = Bm25Index.load(tmp_path / "bm25")
    assert loaded.vocab == index.vocab and loaded.config == index.config
    assert np.array_equal(loaded.scores(small_queries), index.scores(small_queries))
    a, b = index.search(small_queries, 5), loaded.search(small_queries, 5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_errors(tmp_path):
    with pytest.raises(ValueError):
        Bm25Index().build([])
    with pytest.raises(ValueError, match="no tokens"):
        Bm25Index().build(["...", "!"])
    with pytest.raises(RuntimeError, match="build"):
        Bm25Index().search(["x"])
    with pytest.raises(FileNotFoundError):
        Bm25Index.load(tmp_path)
    assert Bm25Index().build(["a b", "c"]).search(["a"], top_n=10)[0].shape == (1, 2)
