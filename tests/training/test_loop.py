"""The one training loop: learning on a toy dictionary, exact resume, DefSent's two decoders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from defsentflow.encoders import encode_texts, load_encoder
from defsentflow.model.query import sentence_head_vectors
from defsentflow.training import (
    TrainConfig,
    encode_entry_matrix,
    linear_schedule,
    single_token_targets,
    train_encoder,
)
from defsentflow.training.checkpoint import CHECKPOINT_NAME


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(model_dir / "model.safetensors"))


def _plus_inputs(base: Path, pairs):
    entries, defs = [e for e, _ in pairs], [d for _, d in pairs]
    em = encode_entry_matrix(base, entries, defs, "amp", device="cpu")
    return defs, em.rows(entries), em.matrix


def _head_loss(model_dir: Path, defs, targets, matrix) -> float:
    h = sentence_head_vectors(model_dir, defs, "mean", True, device="cpu")
    return float(F.cross_entropy(torch.from_numpy(h @ matrix.T), torch.as_tensor(targets)))


def test_defsent_plus_loss_decreases(tiny_bert_dir, toy_pairs, tmp_path):
    defs, targets, matrix = _plus_inputs(tiny_bert_dir, toy_pairs)
    cfg = TrainConfig(method="defsent_plus", batch_size=4, lr=3e-3, epochs=6, device="cpu")
    res = train_encoder(cfg, tiny_bert_dir, defs, targets, out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck",
                        entry_matrix=matrix)
    assert res.steps == 6 * 4 and res.meta["completed"]
    assert not (tmp_path / "ck" / CHECKPOINT_NAME).exists()  # removed once the model is written
    # The trained encoder's head vectors identify the defined entries better than the base model's.
    before = _head_loss(tiny_bert_dir, defs, targets, matrix)
    after = _head_loss(tmp_path / "m", defs, targets, matrix)
    assert after < before - 0.3
    meta = json.loads((tmp_path / "m" / "defsentflow.json").read_text())
    assert meta["method"] == "defsent_plus" and meta["decoder"] == "entry_matrix" and meta["use_pooler"] is True
    assert len(meta["losses"]) == res.steps


def _run(cfg, base, defs, targets, out, ck, matrix=None, stop=None):
    return train_encoder(cfg, base, defs, targets, out_dir=out, checkpoint_dir=ck, entry_matrix=matrix,
                         stop_after_steps=stop)


@pytest.mark.parametrize("method", ["defsent_plus", "defsent"])
def test_killed_run_resumes_to_identical_weights(tiny_bert_dir, tiny_mlm_dir, toy_pairs, tmp_path, method):
    if method == "defsent":
        base = tiny_mlm_dir
        tok = load_encoder(base, device="cpu").tokenizer
        _, targets = single_token_targets(tok, [e for e, _ in toy_pairs])
        defs, matrix = [d for _, d in toy_pairs], None
    else:
        base = tiny_bert_dir
        defs, targets, matrix = _plus_inputs(base, toy_pairs)
    # Dropout is on (tiny configs use 0.1), warm-up and decay both move the rate: all state matters.
    cfg = TrainConfig(method=method, batch_size=3, lr=2e-3, epochs=2, warmup_ratio=0.2, checkpoint_every=4,
                      device="cpu", seed=7)
    full = _run(cfg, base, defs, targets, tmp_path / "full", tmp_path / "ck-full", matrix)
    stopped = _run(cfg, base, defs, targets, tmp_path / "resumed", tmp_path / "ck", matrix, stop=5)
    assert stopped.steps == 5 and not stopped.meta["completed"]
    assert not (tmp_path / "resumed").exists()
    assert [p.name for p in (tmp_path / "ck").iterdir()] == [CHECKPOINT_NAME]  # one file, no temporaries
    stopped = _run(cfg, base, defs, targets, tmp_path / "resumed", tmp_path / "ck", matrix, stop=9)  # mid-epoch 2
    assert stopped.steps == 9
    resumed = _run(cfg, base, defs, targets, tmp_path / "resumed", tmp_path / "ck", matrix)
    assert resumed.steps == full.steps == 12
    a, b = _weights(tmp_path / "full"), _weights(tmp_path / "resumed")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed.meta["losses"] == full.meta["losses"]
    base_w = load_file(str(next(Path(base).glob("*.safetensors"))))
    changed = [k for k in a if k.startswith("encoder.") and not torch.equal(a[k], base_w.get(k, base_w.get("bert." + k)))]
    assert changed, "training changed nothing"


def test_checkpoint_of_another_run_is_rejected(tiny_bert_dir, toy_pairs, tmp_path):
    defs, targets, matrix = _plus_inputs(tiny_bert_dir, toy_pairs)
    cfg = TrainConfig(batch_size=4, device="cpu")
    _run(cfg, tiny_bert_dir, defs, targets, tmp_path / "m", tmp_path / "ck", matrix, stop=1)
    with pytest.raises(ValueError, match="another run"):
        _run(TrainConfig(batch_size=4, device="cpu", lr=1e-4), tiny_bert_dir, defs, targets, tmp_path / "m",
             tmp_path / "ck", matrix)


def test_defsent_with_mlm_head(tiny_mlm_dir, toy_pairs, tmp_path):
    from transformers import BertForMaskedLM

    from defsentflow.training import prepare_backbone

    prepared = prepare_backbone(tiny_mlm_dir, device=torch.device("cpu"), word_head=True, use_pooler=False)
    assert prepared.decoder == "mlm_head"
    ref = BertForMaskedLM.from_pretrained(tiny_mlm_dir).eval()
    h = torch.randn(5, 32)
    with torch.no_grad():
        assert torch.allclose(prepared.word_head(h), ref.cls(h), atol=1e-6)
    assert not any(p.requires_grad for p in prepared.word_head.parameters())

    tok = prepared.encoder.tokenizer
    mask, ids = single_token_targets(tok, [e for e, _ in toy_pairs])
    assert mask.all()
    defs = [d for _, d in toy_pairs]
    cfg = TrainConfig(method="defsent", pooling="cls", batch_size=4, lr=5e-3, epochs=10, device="cpu")
    res = train_encoder(cfg, tiny_mlm_dir, defs, ids, out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck")
    meta = json.loads((tmp_path / "m" / "defsentflow.json").read_text())
    assert meta["decoder"] == "mlm_head" and meta["use_pooler"] is False and meta["frozen"] == ["embeddings"]
    assert np.mean(res.meta["losses"][-4:]) < np.mean(res.meta["losses"][:4])
    # The trained encoder predicts the defined words better through the same frozen head.
    # (A random tiny MLM head bounds the logits' spread, so the loss cannot fall far.)
    def word_loss(model_dir):
        v = torch.from_numpy(encode_texts(str(model_dir), defs, pooling="cls", device="cpu"))
        with torch.no_grad():
            logits = ref.cls(v)
        return float(F.cross_entropy(logits, torch.as_tensor(ids)))
    loss0, loss1 = word_loss(tiny_mlm_dir), word_loss(tmp_path / "m")
    assert loss1 < loss0 - 0.1
    # Token embeddings stay frozen, as in the DefSent reference code.
    w = _weights(tmp_path / "m")
    assert torch.equal(w["embeddings.word_embeddings.weight"], ref.bert.embeddings.word_embeddings.weight)


def test_defsent_falls_back_to_input_embeddings(tiny_bert_dir, toy_pairs, tmp_path):
    from defsentflow.training import prepare_backbone

    prepared = prepare_backbone(tiny_bert_dir, device=torch.device("cpu"), word_head=True, use_pooler=False)
    assert prepared.decoder == "input_embeddings"
    emb = prepared.backbone.get_input_embeddings().weight.detach()
    h = torch.randn(3, 32)
    assert torch.allclose(prepared.word_head(h), h @ emb.T)

    _, ids = single_token_targets(prepared.encoder.tokenizer, [e for e, _ in toy_pairs])
    cfg = TrainConfig(method="defsent", batch_size=4, lr=3e-3, epochs=6, device="cpu")
    res = train_encoder(cfg, tiny_bert_dir, [d for _, d in toy_pairs], ids, out_dir=tmp_path / "m",
                        checkpoint_dir=tmp_path / "ck")
    assert res.meta["decoder"] == "input_embeddings"
    assert json.loads((tmp_path / "m" / "defsentflow.json").read_text())["decoder"] == "input_embeddings"
    assert np.mean(res.meta["losses"][-4:]) < np.mean(res.meta["losses"][:4])


def test_bad_inputs_are_rejected(tiny_bert_dir, tmp_path):
    cfg = TrainConfig(method="defsent", device="cpu")
    kw = dict(out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck")
    with pytest.raises(ValueError, match="2 definitions but 1 targets"):
        train_encoder(cfg, tiny_bert_dir, ["a dog", "a cat"], [1], **kw)
    with pytest.raises(ValueError, match=r"record 1\) is outside"):
        train_encoder(cfg, tiny_bert_dir, ["a dog", "a cat"], [5, 10**6], **kw)
    with pytest.raises(ValueError, match="needs entry_matrix"):
        train_encoder(TrainConfig(device="cpu"), tiny_bert_dir, ["a dog"], [0], **kw)
    with pytest.raises(ValueError, match=r"\[n_entries, 32\]"):
        train_encoder(TrainConfig(device="cpu"), tiny_bert_dir, ["a dog"], [0], entry_matrix=np.zeros((2, 8)), **kw)


def test_saved_model_loads_with_sentence_transformers_and_automodel(tiny_bert_dir, toy_pairs, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    defs, targets, matrix = _plus_inputs(tiny_bert_dir, toy_pairs)
    cfg = TrainConfig(batch_size=4, lr=1e-3, device="cpu")
    train_encoder(cfg, tiny_bert_dir, defs, targets, out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck",
                  entry_matrix=matrix)
    st = SentenceTransformer(str(tmp_path / "m"), device="cpu")
    ours = encode_texts(str(tmp_path / "m"), defs, pooling="mean", device="cpu")
    np.testing.assert_allclose(st.encode(defs, convert_to_numpy=True), ours, atol=1e-5)
    model = AutoModel.from_pretrained(tmp_path / "m")
    w = _weights(tmp_path / "m")
    assert torch.equal(model.pooler.dense.weight, w["pooler.dense.weight"])
    # Head mode: the saved pooler (dense + tanh) applied to the pooled vectors.
    h = sentence_head_vectors(tmp_path / "m", defs, "mean", True, device="cpu")
    with torch.no_grad():
        ref = torch.tanh(model.pooler.dense(torch.from_numpy(ours))).numpy()
    np.testing.assert_allclose(h, ref, atol=1e-5)
    np.testing.assert_allclose(sentence_head_vectors(tmp_path / "m", defs, "mean", False, device="cpu"), ours, atol=1e-6)


def test_linear_schedule():
    warm = linear_schedule(10, 0.2, decay=True)
    expected = [0, 1 / 2, 1, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8]
    assert np.allclose([warm(s) for s in range(10)], expected)
    # DefSent's reference (experiments/src/lr_scheduler.py): step / max(1, W) below W = total * ratio,
    # then constant: the warm-up starts from 0, and W need not be whole
    for total, ratio in ((10, 0.1), (37, 0.1), (100, 0.1)):
        w = total * ratio
        const = linear_schedule(total, ratio, decay=False)
        assert [const(s) for s in range(total)] == [s / max(1.0, w) if s < w else 1.0 for s in range(total)]
    assert linear_schedule(4, 0.0, decay=True)(0) == 1.0


@pytest.mark.slow
def test_minilm_defsent_uses_input_embeddings(minilm_dir, tmp_path):
    """The bundled MiniLM has no MLM head: DefSent trains against its frozen input embeddings."""
    words = ["dog", "cat", "water", "apple", "king", "river", "music", "bread"]
    defs = ["a domesticated carnivorous mammal", "a small feline kept as a pet", "a clear liquid essential for life",
            "a round fruit of a tree", "a male ruler of a country", "a large natural stream of water",
            "an art form of sound in time", "food made of flour and water and baked"]
    tok = load_encoder(minilm_dir, device="cpu").tokenizer
    mask, ids = single_token_targets(tok, words)
    assert mask.all()
    cfg = TrainConfig(method="defsent", batch_size=4, lr=1e-4, epochs=2, device="cpu")
    res = train_encoder(cfg, minilm_dir, defs, ids, out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck")
    assert res.steps == 4 and res.meta["decoder"] == "input_embeddings" and res.meta["pooler_source"] == "checkpoint"
    assert (tmp_path / "m" / "modules.json").is_file()


@pytest.mark.parametrize("scale", [1e-3, 1e3])  # below and above the threshold
def test_clip_gradients_equals_torch(scale):
    from defsentflow.training.loop import clip_gradients

    torch.manual_seed(0)
    a = [torch.nn.Parameter(torch.randn(5, 3)) for _ in range(3)]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    for pa, pb in zip(a, b):
        pa.grad = torch.randn(5, 3) * scale
        pb.grad = pa.grad.clone()
    torch.nn.utils.clip_grad_norm_(a, 1.0)
    clip_gradients(b, 1.0)
    assert all(torch.equal(pa.grad, pb.grad) for pa, pb in zip(a, b))


def test_a_stop_request_ends_training_at_a_checkpoint_that_the_next_run_resumes(tiny_bert_dir, toy_pairs, tmp_path,
                                                                                 monkeypatch, caplog):
    import defsentflow.fanout as fanout
    from defsentflow.training.checkpoint import load_checkpoint

    defs, targets, matrix = _plus_inputs(tiny_bert_dir, toy_pairs)
    cfg = TrainConfig(method="defsent_plus", batch_size=3, lr=2e-3, epochs=2, checkpoint_every=4, device="cpu", seed=7)
    monkeypatch.setattr(fanout, "_stop_requested", lambda: True)  # the command was cancelled
    with pytest.raises(fanout.CandidateStoppedError, match="stopped at step 4"):
        _run(cfg, tiny_bert_dir, defs, targets, tmp_path / "m", tmp_path / "ck", matrix)
    assert load_checkpoint(tmp_path / "ck", map_location="cpu")["step"] == 4 and not (tmp_path / "m").exists()
    monkeypatch.setattr(fanout, "_stop_requested", lambda: False)
    with caplog.at_level("INFO", logger="defsentflow.training.loop"):
        assert _run(cfg, tiny_bert_dir, defs, targets, tmp_path / "m", tmp_path / "ck", matrix).steps == 12
    assert "resuming at step 4" in caplog.text
