"""Exact top-k for batches: one faiss matrix product, or the bf16 prefilter proved exact (else faiss)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.serve.conftest import DEFS


@pytest.fixture(scope="module")
def index(served):
    from defsentflow.revdict import RevdictIndex
    from defsentflow.serve import ServeCatalog

    return RevdictIndex(ServeCatalog(served).resolve("tiny-pst").path)


def test_a_batch_is_searched_as_one_product_with_the_scan_answers(index):
    import faiss

    from defsentflow.serve.search import FlatSearch

    flat = FlatSearch(index, prefilter=False)
    vecs = index.query_vectors(list(DEFS.values()), device="cpu")
    before = faiss.cvar.distance_compute_blas_threshold
    scores, ids = flat.search(vecs, 3)
    assert faiss.cvar.distance_compute_blas_threshold == before  # restored
    for i, v in enumerate(vecs):
        s1, i1 = flat.search(v[None], 3)
        assert i1[0].tolist() == ids[i].tolist()
        np.testing.assert_allclose(s1[0], scores[i], atol=1e-5)


class _Index:
    """A stand-in for a RevdictIndex: a faiss flat inner-product index over ``x``."""

    def __init__(self, x):
        import faiss

        self.index = faiss.IndexFlatIP(x.shape[1])
        self.index.add(x)

    def search_vectors(self, q, k):
        return self.index.search(q, k)


def test_the_bf16_prefilter_returns_the_exact_top_k():
    from defsentflow.serve.search import FlatSearch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((5000, 48)).astype(np.float32) + 0.5  # clustered, like sentence vectors
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[rng.choice(len(x), 40, replace=False)] + 0.05 * rng.standard_normal((40, 48)).astype(np.float32)
    index = _Index(x)
    flat = FlatSearch(index, prefilter=True, candidates=100)
    assert flat.prefilter
    scores, ids = flat.search(q, 10)
    want_s, want_i = index.index.search(q, 10)
    np.testing.assert_allclose(scores, want_s, atol=1e-5)
    assert (ids == want_i).mean() > 0.99  # equal scores may come in another order
    assert flat.certified + flat.fallbacks == len(q) and flat.certified > 0


def test_a_query_the_prefilter_cannot_prove_goes_to_faiss():
    from defsentflow.serve.search import FlatSearch

    rng = np.random.default_rng(1)
    x = np.repeat(rng.standard_normal((1, 16)).astype(np.float32), 300, axis=0)  # 300 equal vectors: all tie
    x[:5] *= 1.0005  # five slightly better ones, closer together than bf16 can tell apart
    index = _Index(x)
    flat = FlatSearch(index, prefilter=True, candidates=20)
    q = np.repeat(x[:1] / np.linalg.norm(x[0]), 3, axis=0)
    scores, ids = flat.search(q, 5)
    assert flat.fallbacks == 3 and flat.certified == 0
    assert sorted(ids[0].tolist()) == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(scores, index.index.search(q, 5)[0], atol=1e-6)
