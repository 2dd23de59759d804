from __future__ import annotations

import numpy as np
import pytest
import torch

from defsentflow.scoring import (
    ContextDiscriminator,
    ContextScorer,
    ContextualScorer,
    CorpusLayout,
    DiscriminativeScorer,
    GenerativeScorer,
    ScorerWeights,
    encode_sentences,
)
from defsentflow.scoring.config import DiscriminativeSection
from tests.scoring.helpers import make_corpus


@pytest.fixture(scope="module")
def parts(tiny_bert_dir, tiny_gpt2_dir):
    layout = CorpusLayout.from_tables(*make_corpus(n_docs=4, seed=5))
    vecs = encode_sentences(tiny_bert_dir, layout.texts)
    torch.manual_seed(0)
    disc = DiscriminativeScorer(ContextDiscriminator(vecs.shape[1], 16), DiscriminativeSection(encoder=str(tiny_bert_dir)), "d1")
    return layout, vecs, disc, GenerativeScorer(tiny_gpt2_dir)


def test_weighted_sum_of_terms(parts):
    layout, vecs, disc, gen = parts
    w = ScorerWeights(0.5, 1.0, 0.25, 2.0)
    S = ContextualScorer(w, disc, gen)
    assert isinstance(S, ContextScorer) and isinstance(disc, ContextScorer)
    sents = [layout.texts[i] for i in (0, 3, 5)]
    ctxs = [layout.context(i, 1) for i in (1, 2, 6)]
    exp = 0.5 * disc.score(sents, ctxs) + gen.terms(sents, ctxs) @ np.array([1.0, 0.25, 2.0])
    np.testing.assert_allclose(S.score(sents, ctxs), exp, rtol=1e-5, atol=1e-5)


def test_score_ids_matches_text_path(parts):
    layout, vecs, disc, gen = parts
    S = ContextualScorer(ScorerWeights(1.0, 0.3, 0.2, 0.1), disc, gen)
    sids, cids = np.array([0, 2, 4, 4]), np.array([3, 0, 1, layout.n_sentences - 1])
    by_id = S.score_ids(layout, vecs, layout.texts, sids, cids, 1)
    by_text = S.score([layout.texts[i] for i in sids], [layout.context(int(c), 1) for c in cids])
    np.testing.assert_allclose(by_id, by_text, rtol=1e-4, atol=1e-5)


def test_version_depends_on_weights_and_parts(parts):
    _, _, disc, gen = parts
    a = ContextualScorer(ScorerWeights(1.0), disc).version
    assert a != ContextualScorer(ScorerWeights(2.0), disc).version
    assert a != ContextualScorer(ScorerWeights(1.0, 0.1), disc, gen).version
    # an unused generative scorer does not change the version
    assert a == ContextualScorer(ScorerWeights(1.0), disc, gen).version


def test_missing_parts_are_errors(parts):
    _, _, disc, _ = parts
    with pytest.raises(ValueError, match="no generative"):
        ContextualScorer(ScorerWeights(1.0, 0.5), disc)
    with pytest.raises(ValueError, match="no discriminative"):
        ContextualScorer(ScorerWeights(1.0))
