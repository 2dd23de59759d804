from __future__ import annotations

import numpy as np
import pytest

from defsentflow.retrieval import DenseConfig, DenseIndex


def _encoder(texts: list[str]) -> np.ndarray:
    """A deterministic bag-of-characters embedding: enough to make neighbours meaningful."""
    out = np.zeros((len(texts), 26), np.float32)
    for i, t in enumerate(texts):
        for ch in t.lower():
            if "a" <= ch <= "z":
                out[i, ord(ch) - 97] += 1
    return out + 1e-3


def test_search_equals_brute_force_cosine(small_docs, small_queries):
    index = DenseIndex(_encoder, DenseConfig(batch_size=50)).build(small_docs)
    ids, scores = index.search(small_queries, top_n=5)
    d, q = _encoder(small_docs), _encoder(small_queries)
    sims = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (d / np.linalg.norm(d, axis=1, keepdims=True)).T
    assert np.allclose(scores, np.sort(sims, axis=1)[:, ::-1][:, :5], atol=1e-5)
    assert np.allclose(np.take_along_axis(sims, ids, axis=1), scores, atol=1e-5)
    assert ids.dtype == np.int64 and scores.dtype == np.float32


def test_save_load_round_trip(tmp_path, small_docs):
    index = DenseIndex(_encoder).build(small_docs)
    index.save(tmp_path / "dense")
    loaded = DenseIndex.load(tmp_path / "dense", _encoder)
    a, b = index.search(small_docs[:10], 3), loaded.search(small_docs[:10], 3)
    assert np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1])
    assert np.allclose(a[1][:, 0], 1.0, atol=1e-5)  # a document is its own nearest neighbour


def test_needs_an_encoder_and_checks_its_output(small_docs):
    with pytest.raises(RuntimeError, match="encoder"):
        DenseIndex().build(small_docs)
    with pytest.raises(ValueError, match="shape"):
        DenseIndex(lambda texts: np.zeros((1, 4), np.float32)).build(small_docs)
