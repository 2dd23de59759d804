"""Packed (unpadded) query encoding gives the padded vectors; the service reports its stages."""

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
