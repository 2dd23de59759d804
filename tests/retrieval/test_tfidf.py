from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from defsentflow.retrieval import TfidfIndex, rank_order


def test_top_results_equal_brute_force_cosine(small_docs, small_queries):
    index = TfidfIndex().build(small_docs)
    vec = TfidfVectorizer(ngram_range=(1, 2)).fit(small_docs)
    brute = cosine_similarity(vec.transform(small_queries), vec.transform(small_docs))
    assert np.allclose(index.scores(small_queries), brute)
    ids, scores = index.search(small_queries, top_n=10, batch_size=9)
    for i, row in enumerate(brute):
        expected = rank_order(row)[:10]
        assert np.allclose(scores[i], row[expected], atol=1e-6)  # same scores, best first
        assert ids[i].tolist() == expected.tolist()
    assert (np.diff(scores, axis=1) <= 1e-7).all()


def test_bigrams_matter():
    index = TfidfIndex().build(["new york city", "york new city"])
    ids, _ = index.search(["new york"], top_n=2)
    assert ids[0].tolist() == [0, 1]


def test_save_load_round_trip(tmp_path, small_docs, small_queries):
    index = TfidfIndex().build(small_docs)
    index.save(tmp_path / "tfidf")
    loaded = TfidfIndex.load(tmp_path / "tfidf")
    assert np.array_equal(loaded.scores(small_queries), index.scores(small_queries))
    assert np.array_equal(loaded.search(small_queries, 5)[0], index.search(small_queries, 5)[0])
