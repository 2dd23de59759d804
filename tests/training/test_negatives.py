"""DefSent+'s softmax over every entry or over sampled negatives; the prepared (single-copy) head."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from defsentflow.encoders import load_encoder
from defsentflow.training import TrainConfig
from defsentflow.training.heads import DefinitionClassifier, prepare_matrix
from defsentflow.training.pst_config import PstSection


def _classifier(tiny_bert_dir, matrix, **kw):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    torch.manual_seed(0)
    return DefinitionClassifier(enc.model, pooling="mean", pooler_dense=None, activation="tanh", matrix=matrix,
                                normalize=True, temperature=0.05, **kw), enc


def _batch(enc, texts, labels):
    b = enc.tokenizer(texts, padding=True, return_tensors="pt")
    return {"input_ids": b["input_ids"], "attention_mask": b["attention_mask"], "labels": torch.tensor(labels)}


def test_sampling_every_entry_equals_the_full_loss(tiny_bert_dir):
    matrix = np.random.default_rng(0).normal(size=(40, 32)).astype(np.float32)
    full, enc = _classifier(tiny_bert_dir, matrix)
    batch = _batch(enc, ["a small dog", "the red apple", "a big house"], [3, 17, 39])
    for k in (40, 1000):
        sampled, _ = _classifier(tiny_bert_dir, matrix, sampled=k, generator=torch.Generator().manual_seed(1))
        torch.testing.assert_close(sampled.loss(batch), full.loss(batch), rtol=0, atol=1e-6)


@pytest.mark.parametrize("normalize, temperature", [(True, 0.05), (False, 1.0)])
def test_fused_full_softmax_equals_autograds_chain(tiny_bert_dir, normalize, temperature):
    """The large-head path (one buffer, gradient in place) gives the chain's loss and gradients."""
    matrix = np.random.default_rng(4).normal(size=(300, 32)).astype(np.float32)
    batch_texts, labels = ["a small dog", "the red apple", "a big house", "to run fast", "blue"], [3, 17, 299, 0, 17]
    grads = []
    for fused in (False, True):
        clf, enc = _classifier(tiny_bert_dir, matrix)
        clf.normalize, clf.temperature = normalize, temperature
        clf.fused_min_entries = 0 if fused else 10**9
        loss = clf.loss(_batch(enc, batch_texts, labels))
        loss.backward()
        grads.append((loss.detach(), [p.grad.clone() for p in clf.backbone.parameters() if p.grad is not None]))
    (chain_loss, chain), (fused_loss, fused) = grads
    torch.testing.assert_close(fused_loss, chain_loss, rtol=1e-6, atol=1e-6)
    assert len(fused) == len(chain) > 0
    for a, b in zip(fused, chain):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_sampled_loss_against_a_hand_computed_reference(tiny_bert_dir):
    n, k = 50, 8
    matrix = np.random.default_rng(2).normal(size=(n, 32)).astype(np.float32)
    clf, enc = _classifier(tiny_bert_dir, matrix, sampled=k, generator=torch.Generator().manual_seed(5))
    batch = _batch(enc, ["a small dog", "the red apple"], [4, 30])
    loss = clf.loss(batch)
    drawn = torch.randperm(n, generator=torch.Generator().manual_seed(5))[:k]
    rows = sorted(set(drawn.tolist()) | {4, 30})
    with torch.no_grad():
        h = F.normalize(clf.sentence_vectors(batch), dim=-1)
        m = F.normalize(torch.from_numpy(matrix), dim=-1)
        ref_logits = (h @ m[rows].T) / 0.05 + torch.tensor([0.0 if r in (4, 30) else np.log(n / k) for r in rows])
    ref = F.cross_entropy(ref_logits, torch.tensor([rows.index(4), rows.index(30)]))
    torch.testing.assert_close(loss.detach(), ref.float(), rtol=1e-5, atol=1e-5)
    loss.backward()  # the gradient reaches the encoder through the sampled rows
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in clf.backbone.parameters())


def test_prepared_matrix_is_one_normalised_copy_in_the_compute_dtype(tmp_path):
    matrix = np.random.default_rng(3).normal(size=(70, 8)).astype(np.float32)
    np.save(tmp_path / "m.npy", matrix)
    mapped = np.load(tmp_path / "m.npy", mmap_mode="r")
    out = prepare_matrix(mapped, normalize=True, dtype=torch.bfloat16, chunk=16)
    assert out.dtype == torch.bfloat16 and out.shape == (70, 8)
    torch.testing.assert_close(out, F.normalize(torch.from_numpy(matrix), dim=-1).to(torch.bfloat16))


def test_negatives_option_is_checked_and_full_keeps_old_keys():
    assert TrainConfig(negatives="sampled  65536").negatives == "sampled 65536"
    assert "negatives" not in TrainConfig().model_dump() and "negatives" not in PstSection().model_dump()
    assert TrainConfig(negatives="sampled 8").model_dump()["negatives"] == "sampled 8"
    for bad in ("some", "sampled", "sampled 0", "sampled -3"):
        with pytest.raises(ValueError, match="negatives must be 'full' or 'sampled K'"):
            TrainConfig(negatives=bad)
    with pytest.raises(ValueError, match="negatives must be"):
        PstSection(negatives="sampled x")
