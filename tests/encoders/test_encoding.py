"""The batched encoding engine against a one-text-at-a-time reference; token budgets; bf16 on CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from defsentflow.encoders import encode_texts, load_encoder
from defsentflow.encoders.encoding import FusedLinear, inference_model, token_budget_batches

TEXTS = [
    "a small animal that lives in the house",
    "a dog",
    "the king of the country and the queen of the city with the old man and the young woman",
    "clear water",
    "a red round fruit from a tree",
    "music",
    "a dog",  # duplicate: encoded once
]


def one_by_one(enc, texts, pooling):
    """No padding at all: each text alone through the model."""
    out = []
    with torch.no_grad():
        for t in texts:
            b = enc.tokenizer([t], return_tensors="pt")
            h = enc.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state[0]
            out.append({"cls": h[0], "mean": h.mean(0), "max": h.max(0).values}[pooling].numpy())
    return np.stack(out)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_matches_unpadded_reference(tiny_bert_dir, pooling):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    enc.model.eval()
    ref = one_by_one(enc, TEXTS, pooling)
    for kw in ({}, {"batch_size": 2}, {"max_tokens": 20}):  # one batch, fixed-size batches, token budget
        got = encode_texts(enc, TEXTS, pooling=pooling, **kw)
        np.testing.assert_allclose(got, ref, atol=1e-5)


def test_token_budget_batches():
    lengths = np.random.default_rng(0).integers(2, 60, size=500)
    order = np.argsort(-lengths, kind="stable")
    batches = token_budget_batches(lengths, order, 64, 1000)
    assert np.array_equal(np.concatenate(batches), order)
    assert all(len(b) <= 64 and (len(b) == 1 or len(b) * lengths[b].max() <= 1000) for b in batches)
    assert len(batches[0]) < 64 and len(batches[-1]) <= 64  # long texts come in smaller batches
    assert token_budget_batches(np.array([100]), np.array([0]), 8, 10)[0].tolist() == [0]  # one text over budget


def test_bf16_on_cpu_is_close_and_leaves_the_model_alone(tiny_bert_dir):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    enc.model.train()
    before = {k: v.clone() for k, v in enc.model.state_dict().items()}
    fp32 = encode_texts(enc, TEXTS, pooling="mean")
    bf16 = encode_texts(enc, TEXTS, pooling="mean", autocast="bf16")
    assert bf16.dtype == np.float32
    cos = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    assert cos.min() > 0.999
    assert not np.array_equal(fp32, bf16)  # really ran in bf16
    assert enc.model.training and all(torch.equal(v, before[k]) and v.dtype == before[k].dtype
                                      for k, v in enc.model.state_dict().items())
    fast = inference_model(enc.model, torch.device("cpu"), "bf16")
    assert all(p.dtype == torch.bfloat16 for p in fast.parameters())
    assert all(m.weight.dtype == torch.bfloat16 for m in fast.modules() if isinstance(m, FusedLinear))


def test_inference_copy_is_fused_cached_and_follows_weight_changes(tiny_bert_dir, monkeypatch):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    cpu = torch.device("cpu")
    fast = inference_model(enc.model, cpu)
    assert fast is not enc.model and inference_model(enc.model, cpu) is fast  # cached
    assert not any(type(m) is torch.nn.Linear for m in fast.modules())
    # The intermediate GELU is fused into its dense layer.
    assert fast.encoder.layer[0].intermediate.dense.attr == "gelu"
    before = encode_texts(enc, TEXTS, pooling="mean")
    with torch.no_grad():
        enc.model.encoder.layer[0].output.dense.weight.mul_(2.0)  # in place, as an optimizer step
    after = encode_texts(enc, TEXTS, pooling="mean")
    assert not np.allclose(before, after, atol=1e-4)
    enc.model.eval()
    np.testing.assert_allclose(after, one_by_one(enc, TEXTS, "mean"), atol=1e-5)
    assert inference_model(enc.model, cpu, "bf16") is not inference_model(enc.model, cpu)
    monkeypatch.setenv("DEFSENTFLOW_FUSED_LINEAR", "0")
    assert inference_model(enc.model, cpu) is enc.model


def test_cache_serves_the_second_call(tiny_bert_dir, home, monkeypatch):
    import defsentflow.encoders.encoding as encoding

    enc = load_encoder(tiny_bert_dir, device="cpu")
    first = encode_texts(enc, TEXTS, pooling="mean", cache=True)
    monkeypatch.setattr(encoding, "encode_batch", lambda *a, **k: pytest.fail("cache miss"))
    np.testing.assert_array_equal(encode_texts(enc, TEXTS, pooling="mean", cache=True), first)


@pytest.mark.slow
def test_minilm_bf16_close_to_fp32(minilm_dir):
    enc = load_encoder(minilm_dir, device="cpu")
    fp32 = encode_texts(enc, TEXTS, pooling="mean", normalize=True)
    bf16 = encode_texts(enc, TEXTS, pooling="mean", normalize=True, autocast="bf16")
    assert (fp32 * bf16).sum(1).min() > 0.999
