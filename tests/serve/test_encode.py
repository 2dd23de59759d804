"""Packed (unpadded) query encoding and batched faiss search give the padded, one-at-a-time answers."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.serve.conftest import DEFS

QUERIES = ["a small animal that lives in a house", "water", "music with words",
           "the man who is ruler of a country and of all the people who live in it, in peace and in war",
           "you open it to go into a room", "a young person"]


@pytest.fixture(scope="module")
def index(served):
    from defsentflow.revdict import RevdictIndex
    from defsentflow.serve import ServeCatalog

    return RevdictIndex(ServeCatalog(served).resolve("tiny-pst").path)


@pytest.mark.parametrize("max_tokens", [256, 12])  # 12: several rows per batch, the long query alone in one
def test_packed_vectors_are_the_padded_ones(index, max_tokens):
    from defsentflow.serve.encode import PackedQueryEncoder

    packed = PackedQueryEncoder.for_index(index.meta, device="cpu")
    assert packed is not None
    packed.max_tokens = max_tokens
    got = packed.encode(QUERIES)
    want = index.query_vectors(QUERIES, device="cpu")
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(packed.encode(QUERIES[:1]), want[:1], atol=1e-5)


def test_packed_cls_pooling_matches_the_first_token(index):
    from defsentflow.encoders import encode_texts
    from defsentflow.serve.encode import PackedQueryEncoder

    packed = PackedQueryEncoder.for_index({**index.meta, "pooling": "cls"}, device="cpu")
    assert packed is not None
    want = encode_texts(packed.enc, QUERIES, pooling="cls", max_length=index.meta["max_length"])
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    np.testing.assert_allclose(packed.encode(QUERIES), want, atol=1e-5)


@pytest.mark.parametrize("change", [{"mode": "head"}, {"pooling": "max"}, {"pooling": "prompt"}])
def test_other_modes_and_poolings_are_not_packed(index, change):
    from defsentflow.serve.encode import PackedQueryEncoder

    assert PackedQueryEncoder.for_index({**index.meta, **change}, device="cpu") is None


def test_a_probe_that_disagrees_turns_packing_off(index):
    from defsentflow.serve.encode import PackedQueryEncoder

    assert PackedQueryEncoder.for_index(index.meta, device="cpu", tolerance=-1.0) is None


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


def test_the_service_reports_time_per_stage(served):
    from defsentflow.serve import ServeCatalog
    from defsentflow.serve.lookup import LookupService

    service = LookupService(max_batch=8, max_wait_ms=5, threads=1)
    served_index = ServeCatalog(served).resolve("tiny-pst")

    async def many():
        try:
            return await asyncio.gather(*(service.lookup(served_index, d, 2) for d in DEFS.values()))
        finally:
            await service.close()

    results = asyncio.run(many())
    assert [r[0].entry for r in results] == list(DEFS)
    stats = service.stats()[served_index.key]
    assert stats["packed"] is True and stats["items"] == len(DEFS)
    assert stats["prefilter"] is False  # 12 entries: fewer than the candidates, faiss searches them
    assert stats["encode_seconds"] > 0 and stats["search_seconds"] > 0 and stats["queued_seconds"] >= 0
    assert stats["encode_seconds"] + stats["search_seconds"] <= stats["seconds"]


@pytest.mark.parametrize("argv, message", [(["--threads", "0"], "--threads must be >= 1, got 0"),
                                           (["--max-batch", "0"], "--max-batch must be >= 1")])
def test_serve_refuses_bad_worker_settings_in_one_line(argv, message, home, capsys):
    from defsentflow.cli import main

    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
