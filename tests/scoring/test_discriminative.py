from __future__ import annotations

import numpy as np
import pytest
import torch

from defsentflow.scoring import (
    ContextDiscriminator,
    CorpusLayout,
    DiscriminativeScorer,
    context_vectors,
    encode_sentences,
    sample_negatives,
    train_discriminator,
)
from defsentflow.scoring.config import DiscriminativeSection
from tests.scoring.helpers import make_corpus


@pytest.fixture(scope="module")
def layout():
    return CorpusLayout.from_tables(*make_corpus(n_docs=60, seed=3, paras=(2, 4), sents=(2, 5)))


def _topic_vectors(layout, dim=16, seed=0):
    """Each document has a direction; a sentence is its document's direction plus noise."""
    rng = np.random.default_rng(seed)
    topic = {d: rng.normal(size=dim) for d in np.unique(layout.doc_start)}
    v = np.stack([topic[d] + 0.6 * rng.normal(size=dim) for d in layout.doc_start]).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_negatives(layout):
    rng = np.random.default_rng(0)
    slots = np.flatnonzero(layout.doc_end - layout.doc_start > 1)
    s = np.repeat(slots, 20)
    for k in (1, 2):
        neg = sample_negatives(layout, s, k, 1.0, rng)
        assert (neg != s).all()
        room = (layout.doc_end[s] - layout.doc_start[s]) - (np.minimum(layout.doc_end[s] - 1, s + k)
                                                            - np.maximum(layout.doc_start[s], s - k) + 1)
        same = layout.doc_start[neg] == layout.doc_start[s]
        # same-document negatives lie outside the slot's window [i-k, i+k], whenever the document has room
        assert same[room > 0].all()
        assert (np.abs(neg - s)[room > 0] > k).all()
        # and every position outside the window is drawn
        i = int(slots[np.argmax(room[::20])])
        drawn = set(sample_negatives(layout, np.full(2000, i), k, 1.0, rng).tolist())
        window = set(range(i - k, i + k + 1))
        assert drawn == set(range(int(layout.doc_start[i]), int(layout.doc_end[i]))) - window
    mixed = sample_negatives(layout, s, 1, 0.5, rng)
    assert (mixed != s).all()
    assert 0.35 < (layout.doc_start[mixed] == layout.doc_start[s]).mean() < 0.65
    only_random = sample_negatives(layout, slots, 1, 0.0, rng)
    assert (layout.doc_start[only_random] == layout.doc_start[slots]).mean() < 0.2


@pytest.fixture()
def one_thread():
    # a tiny MLP: on a busy 2-core machine, thread hand-offs cost more than the maths
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_training_learns_and_reports_heldout_accuracy(layout, one_thread):
    vecs = _topic_vectors(layout)
    scorer = train_discriminator(layout, vecs, DiscriminativeSection(hidden=32, epochs=30, batch_size=64, lr=3e-3,
                                                                    heldout_share=0.2, seed=0))
    m = scorer.metrics
    assert m["n_heldout_slots"] > 20 and m["n_train_slots"] > m["n_heldout_slots"]
    # sentences from another document point elsewhere: easy to reject; same-document ones are not
    assert m["heldout_accuracy_random_negative"] > 0.9
    assert m["heldout_accuracy_positive"] > 0.6
    assert m["heldout_accuracy"] > 0.6
    # the reported accuracy is what the saved head does on the held-out slots
    scores = scorer.score_vectors(vecs[:5], *context_vectors(layout, vecs, np.arange(5), 1))
    assert scores.shape == (5,) and (scores <= 0).all()


def test_save_load_round_trip(tmp_path, layout):
    torch.manual_seed(0)
    head = ContextDiscriminator(8, hidden=16)
    scorer = DiscriminativeScorer(head, DiscriminativeSection(hidden=16), "v1", {"heldout_accuracy": 0.5})
    scorer.save(tmp_path / "s")
    back = DiscriminativeScorer.load(tmp_path / "s")
    rng = np.random.default_rng(0)
    s, left, r = (rng.normal(size=(7, 8)).astype(np.float32) for _ in range(3))
    np.testing.assert_array_equal(scorer.score_vectors(s, left, r), back.score_vectors(s, left, r))
    assert back.version == "v1" and back.metrics["heldout_accuracy"] == 0.5


def test_score_vectors_is_log_sigmoid_of_an_mlp_over_the_features():
    torch.manual_seed(1)
    d = 4
    head = ContextDiscriminator(d, hidden=8)
    scorer = DiscriminativeScorer(head, DiscriminativeSection(), "v")
    rng = np.random.default_rng(1)
    s, left, r = (rng.normal(size=(5, d)).astype(np.float64) for _ in range(3))
    # reference: ONE linear layer over [u_<, s, u_>, s*u_<, s*u_>], written out with numpy
    blocks = (head.left, head.sentence, head.right, head.left_product, head.right_product)
    w = np.concatenate([m.weight.detach().double().numpy() for m in blocks], axis=1)
    feats = np.concatenate([left, s, r, s * left, s * r], axis=1)
    h = np.maximum(feats @ w.T + head.sentence.bias.detach().double().numpy(), 0)
    lin2, lin3 = head.rest[2], head.rest[5]
    h = np.maximum(h @ lin2.weight.detach().double().numpy().T + lin2.bias.detach().double().numpy(), 0)
    logit = (h @ lin3.weight.detach().double().numpy().T + lin3.bias.detach().double().numpy())[:, 0]
    np.testing.assert_allclose(scorer.score_vectors(s, left, r), -np.log1p(np.exp(-logit)), rtol=1e-5, atol=1e-6)


def test_score_index_equals_row_aligned_scores():
    torch.manual_seed(2)
    scorer = DiscriminativeScorer(ContextDiscriminator(6, hidden=8), DiscriminativeSection(), "v")
    rng = np.random.default_rng(2)
    s = rng.normal(size=(4, 6)).astype(np.float32)
    left, r = rng.normal(size=(7, 6)).astype(np.float32), rng.normal(size=(7, 6)).astype(np.float32)
    si, ci = rng.integers(0, 4, 50), rng.integers(0, 7, 50)
    got = scorer.score_index(s, left, r, si, ci, batch_size=16)
    np.testing.assert_allclose(got, scorer.score_vectors(s[si], left[ci], r[ci]), rtol=1e-5, atol=1e-6)


def test_text_path_matches_vector_path(tiny_bert_dir, layout):
    vecs = encode_sentences(tiny_bert_dir, layout.texts)
    torch.manual_seed(0)
    scorer = DiscriminativeScorer(ContextDiscriminator(vecs.shape[1], 16), DiscriminativeSection(encoder=str(tiny_bert_dir)), "v")
    ids = np.arange(12)
    by_vec = scorer.score_vectors(vecs[ids], *context_vectors(layout, vecs, ids, 2))
    by_text = scorer.score([layout.texts[i] for i in ids], [layout.context(int(i), 2) for i in ids])
    np.testing.assert_allclose(by_text, by_vec, rtol=1e-4, atol=1e-5)
