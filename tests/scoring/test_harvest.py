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
    collect_parts,
    eligible_sentences,
    encode_sentences,
    harvest_batch,
    jaccard,
    label_stats,
    plan_batches,
)
from defsentflow.scoring.config import DiscriminativeSection
from tests.scoring.helpers import OverlapSearch, harvest_settings, make_corpus

SETTINGS = harvest_settings(contexts={"k": 1, "set_size": 4}, retrieval={"top_n": 8},
                            pairs={"n_pairs": 60, "neighbour_share": 0.5, "pairs_per_sentence": 3, "neighbour_chunks": 3,
                                   "min_words": 3, "max_words": 40}, batch_size=5, seed=0)


@pytest.fixture(scope="module")
def resources(tiny_bert_dir):
    sentences, chunks = make_corpus(n_docs=14, seed=11, paras=(1, 3), sents=(1, 4), chunk_sentences=3)
    layout = CorpusLayout.from_tables(sentences, chunks)
    extras = ["the cat is a small animal", "a river of clear water"]
    texts = list(layout.texts) + extras
    vecs = encode_sentences(tiny_bert_dir, texts)
    torch.manual_seed(0)
    disc = DiscriminativeScorer(ContextDiscriminator(vecs.shape[1], 16), DiscriminativeSection(encoder=str(tiny_bert_dir)), "d")
    scorer = ContextualScorer(ScorerWeights(1.0), disc)
    return HarvestResources(layout, texts, vecs, scorer, OverlapSearch(chunks.column("text").to_pylist()).search)


def _run(res, parts_dir, settings=SETTINGS):
    eligible = eligible_sentences(res.texts, settings.pairs.min_words, settings.pairs.max_words)
    specs = plan_batches(eligible, settings)
    out = [harvest_batch(res, s, settings, parts_dir, eligible) for s in specs]
    return specs, out, collect_parts(parts_dir, len(specs))


def test_plan_splits_the_pair_budget_exactly():
    eligible = np.arange(1000)
    for n_pairs, share, per, bs in [(20000, 0.5, 4, 500), (61, 0.3, 3, 7), (10, 1.0, 2, 3)]:
        specs = plan_batches(eligible, harvest_settings(
            pairs={"n_pairs": n_pairs, "neighbour_share": share, "pairs_per_sentence": per}, batch_size=bs))
        assert sum(s.n_neighbour + s.n_random for s in specs) == n_pairs
        seeds = [x for s in specs for x in s.seeds]
        assert len(seeds) == len(set(seeds)) == min(1000, int(np.ceil(n_pairs / per)))
        assert all(len(s.seeds) < 1.5 * bs for s in specs)  # a short last batch joins the one before
    assert plan_batches(eligible, SETTINGS) == plan_batches(eligible, SETTINGS)


def test_batch_pairs_and_context_sets_follow_the_rules(resources, tmp_path):
    specs, _, table = _run(resources, tmp_path)
    assert table.num_rows == SETTINGS.pairs.n_pairs
    rows = table.to_pylist()
    lay = resources.layout
    seen = set()
    for r in rows:
        assert r["s1_id"] != r["s2_id"]
        key = (r["batch"], min(r["s1_id"], r["s2_id"]), max(r["s1_id"], r["s2_id"]))
        assert key not in seen
        seen.add(key)
        assert r["s1"] == resources.texts[r["s1_id"]] and r["s2"] == resources.texts[r["s2_id"]]
        if r["kind"] == "neighbour":  # a retrieval neighbour from another document
            assert resources.doc_of[r["s2_id"]] != resources.doc_of[r["s1_id"]]
        for sid, ctx in ((r["s1_id"], r["s1_contexts"]), (r["s2_id"], r["s2_contexts"])):
            assert 0 < len(ctx) <= SETTINGS.contexts.set_size
            chunks_of = lay.chunk_of[ctx]
            assert len(set(chunks_of.tolist())) == len(ctx)  # one per chunk
            retrieved = set(resources.search([resources.texts[sid]], SETTINGS.retrieval.top_n)[0][0].tolist())
            assert set(chunks_of.tolist()) <= retrieved
            prev = [resources.previous_words(c) for c in ctx]
            for i in range(len(prev)):
                for j in range(i):
                    if prev[i] and prev[j]:
                        assert jaccard(prev[i], prev[j]) < SETTINGS.contexts.max_jaccard
    kinds = table.column("kind").to_pylist()
    assert kinds.count("neighbour") > 0 and kinds.count("random") > 0
    assert set(kinds) == {"neighbour", "random"}


def test_labels_equal_a_slow_loop(resources, tmp_path):
    _, _, table = _run(resources, tmp_path)
    S = resources.scorer
    lay = resources.layout
    for r in table.to_pylist()[::10]:
        C = r["s1_contexts"] + r["s2_contexts"]
        ctxs = [lay.context(c, SETTINGS.contexts.k) for c in C]
        v1 = S.score([r["s1"]] * len(C), ctxs)
        v2 = S.score([r["s2"]] * len(C), ctxs)
        assert r["score"] == pytest.approx(cosine_similarity([v1], [v2])[0, 0], abs=1e-4)


def test_context_set_is_the_top_of_the_ranking(resources, tmp_path):
    """C_s starts with the best-scoring candidate slot of the retrieved chunks."""
    _, _, table = _run(resources, tmp_path)
    r = table.to_pylist()[0]
    sid = r["s1_id"]
    chunk_ids = resources.search([resources.texts[sid]], SETTINGS.retrieval.top_n)[0][0]
    cids, _ = resources.layout.slots(chunk_ids[chunk_ids >= 0])
    scores = resources.score_ids(np.full(len(cids), sid), cids, SETTINGS.contexts.k)
    assert r["s1_contexts"][0] == cids[np.lexsort((cids, -scores))[0]]


def test_resume_does_not_rescore_finished_batches(resources, tmp_path, monkeypatch):
    reference = _run(resources, tmp_path / "ref")[2]
    parts = tmp_path / "parts"
    eligible = eligible_sentences(resources.texts, SETTINGS.pairs.min_words, SETTINGS.pairs.max_words)
    specs = plan_batches(eligible, SETTINGS)
    crash_at = 2
    assert len(specs) > crash_at + 1
    for spec in specs[:crash_at]:
        harvest_batch(resources, spec, SETTINGS, parts, eligible)
    # batch `crash_at` dies while scoring: nothing of it may be left under a final name
    with monkeypatch.context() as m:
        m.setattr(resources, "score_ids", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("killed")))
        with pytest.raises(RuntimeError, match="killed"):
            harvest_batch(resources, specs[crash_at], SETTINGS, parts, eligible)
    assert sorted(p.name for p in parts.iterdir() if p.name.startswith("pairs-")) == [
        f"pairs-{i:05d}.parquet" for i in range(crash_at)]
    stamps = {p.name: p.stat().st_mtime_ns for p in parts.iterdir()}

    scored = []
    original = resources.score_ids

    def spy(sids, cids, k):
        scored.append(len(sids))
        return original(sids, cids, k)

    with monkeypatch.context() as m:
        m.setattr(resources, "score_ids", spy)
        results = [harvest_batch(resources, spec, SETTINGS, parts, eligible) for spec in specs]
    assert [r["computed"] for r in results] == [False] * crash_at + [True] * (len(specs) - crash_at)
    assert all(r["n_scored"] == 0 for r in results[:crash_at])
    assert sum(scored) == sum(r["n_scored"] for r in results[crash_at:]) > 0
    assert {n: (parts / n).stat().st_mtime_ns for n in stamps} == stamps  # finished parts untouched
    resumed = collect_parts(parts, len(specs))
    assert resumed.drop_columns(["score"]).equals(reference.drop_columns(["score"]))
    np.testing.assert_allclose(resumed.column("score").to_numpy(), reference.column("score").to_numpy(), atol=1e-6)


def test_label_stats():
    x = np.linspace(0, 1, 101)
    st = label_stats(x, bins=10)
    assert st["n_pairs"] == 101 and st["mean"] == pytest.approx(0.5) and st["std"] == pytest.approx(x.std())
    assert st["quantiles"]["q50"] == pytest.approx(0.5) and st["quantiles"]["q100"] == 1.0
    assert sum(st["histogram"]["counts"]) == 101 and len(st["histogram"]["edges"]) == 11


@pytest.mark.parametrize("selection", ["top", "random"])
def test_harvest_with_other_selection_strategies(resources, tmp_path, selection):
    settings = SETTINGS.model_copy(update={"contexts": SETTINGS.contexts.model_copy(update={"selection": selection})})
    _, _, table = _run(resources, tmp_path, settings)
    assert table.num_rows == settings.pairs.n_pairs and np.isfinite(table.column("score").to_numpy()).all()
    lay = resources.layout
    for r in table.to_pylist()[::7]:
        sid, ctx = r["s1_id"], r["s1_contexts"]
        if selection == "random":  # uniform corpus slots, the same set for a sentence in any batch
            assert len(ctx) == settings.contexts.set_size == len(set(ctx)) and max(ctx) < lay.n_sentences
            assert ctx == np.random.default_rng([settings.seed, sid]).choice(
                lay.n_sentences, size=settings.contexts.set_size, replace=False).tolist()
        else:  # the best-scored slots of the retrieved chunks, best first, no diversity rule
            chunk_ids = resources.search([resources.texts[sid]], settings.retrieval.top_n)[0][0]
            cids, _ = lay.slots(chunk_ids[chunk_ids >= 0])
            scores = resources.score_ids(np.full(len(cids), sid), cids, settings.contexts.k)
            assert ctx == cids[np.lexsort((cids, -scores))[:settings.contexts.set_size]].tolist()
