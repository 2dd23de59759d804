"""The harvest labeller applied to sentences outside the corpus (Origin)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics.pairwise import cosine_similarity

from defsentflow.scoring import (
    ContextDiscriminator,
    ContextualScorer,
    CorpusLayout,
    DiscriminativeScorer,
    HarvestResources,
    ScorerWeights,
    encode_sentences,
    select_context_set,
)
from defsentflow.scoring.config import DiscriminativeSection
from defsentflow.scoring.origin import OriginPoint, PairLabeller
from tests.scoring.helpers import OverlapSearch, make_corpus

OUTSIDE = ["the cat sat on a mat near the river", "a cat was sitting on the mat by a river",
           "stock prices fell sharply today", "the market dropped hard", "the cat sat on a mat near the river"]


@pytest.fixture(scope="module")
def labeller_parts(tiny_bert_dir):
    sentences, chunks = make_corpus(n_docs=14, seed=3, paras=(1, 3), sents=(1, 4), chunk_sentences=3)
    layout = CorpusLayout.from_tables(sentences, chunks)
    texts = list(layout.texts)
    vecs = encode_sentences(tiny_bert_dir, texts + OUTSIDE)
    torch.manual_seed(0)
    disc = DiscriminativeScorer(ContextDiscriminator(vecs.shape[1], 16), DiscriminativeSection(encoder=str(tiny_bert_dir)), "d")
    res = HarvestResources(layout, texts, vecs[:len(texts)], ContextualScorer(ScorerWeights(1.0), disc),
                           OverlapSearch(chunks.column("text").to_pylist()).search)
    return res, vecs[len(texts):]


def _reference(res, vectors, pair, point):
    """Eq. 4 by hand: retrieve, score every slot, choose C_s, cosine over C_s1 + C_s2."""
    texts = [*res.texts, *OUTSIDE]
    vecs = np.concatenate([res.vectors, vectors])
    n = len(res.texts)

    def score(sid, cids):
        return res.scorer.score_ids(res.layout, vecs, texts, np.full(len(cids), sid), np.asarray(cids), 1)

    sets = []
    for pos in pair:
        chunk_ids = res.search([OUTSIDE[pos]], point.top_n)[0][0]
        cids, owner = res.layout.slots(chunk_ids[chunk_ids >= 0])
        sets.append(select_context_set(cids, owner, score(n + pos, cids), point.set_size,
                                       previous_words=res.previous_words))
    ctx = np.concatenate(sets)
    v1, v2 = score(n + pair[0], ctx), score(n + pair[1], ctx)
    if point.similarity == "centered_cosine":
        return float(np.corrcoef(v1.astype(np.float64), v2.astype(np.float64))[0, 1])
    return float(cosine_similarity(v1[None].astype(np.float64), v2[None].astype(np.float64))[0, 0])


def test_similarities_match_a_hand_computation(labeller_parts):
    res, vectors = labeller_parts
    labeller = PairLabeller(res, OUTSIDE, vectors)
    pairs = np.array([[0, 1], [2, 3], [0, 2]])
    point = OriginPoint(set_size=3, selection="diverse", top_n=6)
    got = labeller.similarities(pairs, point)
    want = [_reference(res, vectors, p, point) for p in pairs.tolist()]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    centered = OriginPoint(set_size=3, selection="diverse", top_n=6, similarity="centered_cosine")
    np.testing.assert_allclose(labeller.similarities(pairs, centered),
                               [_reference(res, vectors, p, centered) for p in pairs.tolist()], rtol=1e-4, atol=1e-5)
    # identical texts get identical context sets and a similarity of 1
    assert labeller.similarities(np.array([[0, 4]]), point)[0] == pytest.approx(1.0, abs=1e-6)


def test_smaller_top_n_after_a_larger_one_is_a_prefix(labeller_parts):
    res, vectors = labeller_parts
    pairs = np.array([[0, 1], [2, 3], [1, 3]])
    small = OriginPoint(set_size=2, selection="diverse", top_n=4)
    shared = PairLabeller(res, OUTSIDE, vectors)
    shared.similarities(pairs, OriginPoint(set_size=5, selection="diverse", top_n=9))
    scored = shared.cache.misses
    np.testing.assert_array_equal(shared.similarities(pairs, small), PairLabeller(res, OUTSIDE, vectors).similarities(pairs, small))
    assert shared.cache.misses == scored  # everything the smaller point needs was already scored
    # a smaller |C_s| at the same top_n is the head of the larger set, cut from it
    big = shared.context_sets(np.arange(4), OriginPoint(set_size=5, selection="top", top_n=9))
    fresh = PairLabeller(res, OUTSIDE, vectors).context_sets(np.arange(4), OriginPoint(2, "top", 9))
    cut = shared.context_sets(np.arange(4), OriginPoint(set_size=2, selection="top", top_n=9))
    assert all(np.array_equal(cut[k], fresh[k]) and np.array_equal(cut[k], big[k][:2]) for k in fresh)


def test_strategies_choose_different_contexts(labeller_parts):
    res, vectors = labeller_parts
    labeller = PairLabeller(res, OUTSIDE, vectors, seed=7)
    pos = np.array([0, 1])
    top = labeller.context_sets(pos, OriginPoint(4, "top", 6))
    diverse = labeller.context_sets(pos, OriginPoint(4, "diverse", 6))
    rand = labeller.context_sets(pos, OriginPoint(4, "random", 6))
    n = res.layout.n_sentences
    for sid in top:
        retrieved = set(res.layout.slots(labeller.retrieved(np.array([sid]), 6)[sid])[0].tolist())
        assert set(top[sid].tolist()) <= retrieved and set(diverse[sid].tolist()) <= retrieved
        chunks = res.layout.chunk_of[diverse[sid]]
        assert len(set(chunks.tolist())) == len(chunks)  # diverse: one context per chunk
        scores = labeller.cache.lookup(np.full(len(top[sid]), sid), top[sid])[1]
        assert (np.diff(scores) <= 0).all()  # top: best first
        assert len(rand[sid]) == 4 and len(set(rand[sid].tolist())) == 4 and rand[sid].max() < n
    again = PairLabeller(res, OUTSIDE, vectors, seed=7).context_sets(pos, OriginPoint(4, "random", 6))
    assert all(np.array_equal(rand[k], again[k]) for k in rand)  # seeded


def test_point_rejects_bad_settings():
    with pytest.raises(ValueError, match="selection"):
        OriginPoint(5, "best", 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="top_n"):
        OriginPoint(50, "diverse", 10)
    assert OriginPoint(50, "random", 10).name == "random-c50-n10"  # random does not retrieve
