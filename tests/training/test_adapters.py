"""Backbone adapters: BERT keeps its trained pooler, RoBERTa's comes from the MLM head's dense layer."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from defsentflow.encoders import encode_texts
from defsentflow.model.query import sentence_head_vectors
from defsentflow.training import (
    TrainConfig,
    adapter_for,
    encode_entry_matrix,
    prepare_backbone,
    train_encoder,
)

CPU = torch.device("cpu")


def test_roberta_pooler_is_copied_from_the_mlm_dense(tiny_roberta_dir):
    from transformers import RobertaForMaskedLM

    ref = RobertaForMaskedLM.from_pretrained(tiny_roberta_dir)
    prepared = prepare_backbone(tiny_roberta_dir, device=CPU, word_head=False, use_pooler=True)
    assert prepared.encoder.family == "roberta" and prepared.adapter.pooler_activation == "gelu"
    assert prepared.pooler_source == "mlm_dense"
    dense = prepared.pooler_dense()
    assert torch.equal(dense.weight, ref.lm_head.dense.weight) and torch.equal(dense.bias, ref.lm_head.dense.bias)
    # Without the pooler nothing is copied (the checkpoint has no pooler: it stays as initialised).
    plain = prepare_backbone(tiny_roberta_dir, device=CPU, word_head=False, use_pooler=False)
    assert plain.pooler_source == "random"
    assert not torch.equal(plain.pooler_dense().weight, ref.lm_head.dense.weight)


def test_roberta_word_prediction_layer_is_lm_head(tiny_roberta_dir):
    from transformers import RobertaForMaskedLM

    ref = RobertaForMaskedLM.from_pretrained(tiny_roberta_dir).eval()
    prepared = prepare_backbone(tiny_roberta_dir, device=CPU, word_head=True, use_pooler=False)
    assert prepared.decoder == "mlm_head"
    h = torch.randn(4, 32)
    with torch.no_grad():
        torch.testing.assert_close(prepared.word_head(h), ref.lm_head(h))


def test_roberta_defsent_plus_trains_with_gelu_pooler(tiny_roberta_dir, toy_pairs, tmp_path):
    entries, defs = [e for e, _ in toy_pairs], [d for _, d in toy_pairs]
    em = encode_entry_matrix(tiny_roberta_dir, entries, defs, "ac", device="cpu")
    cfg = TrainConfig(pooling="cls", batch_size=4, lr=1e-3, device="cpu")
    train_encoder(cfg, tiny_roberta_dir, defs, em.rows(entries), out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck",
                  entry_matrix=em.matrix)
    meta = json.loads((tmp_path / "m" / "defsentflow.json").read_text())
    assert meta["pooler_activation"] == "gelu" and meta["pooler_source"] == "mlm_dense" and meta["family"] == "roberta"
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tmp_path / "m")
    pooled = encode_texts(str(tmp_path / "m"), defs, pooling="cls", device="cpu")
    with torch.no_grad():
        expected = F.gelu(model.pooler.dense(torch.from_numpy(pooled))).numpy()
    np.testing.assert_allclose(sentence_head_vectors(tmp_path / "m", defs, "cls", True, device="cpu"), expected, atol=1e-5)


def test_head_vectors_of_an_untrained_roberta_use_the_mlm_dense(tiny_roberta_dir):
    from transformers import RobertaForMaskedLM

    ref = RobertaForMaskedLM.from_pretrained(tiny_roberta_dir)
    texts = ["a small dog", "the king of the country"]
    pooled = encode_texts(str(tiny_roberta_dir), texts, pooling="mean", device="cpu")
    with torch.no_grad():
        expected = F.gelu(ref.lm_head.dense(torch.from_numpy(pooled))).numpy()
    np.testing.assert_allclose(sentence_head_vectors(tiny_roberta_dir, texts, "mean", True, device="cpu"), expected, atol=1e-5)


def test_a_simcse_style_roberta_continues_through_the_raw_models_lm_head_dense(tiny_roberta_dir, toy_pairs, tmp_path):
    """DefSent+'s reference (TrainEncoder.py:112-118) on a SimCSE / SNCSE RoBERTa: the checkpoint's own pooler
    (SimCSE's MLP, trained with tanh) is replaced by the raw roberta-* checkpoint's lm_head.dense with GELU
    (issue 57). Without the raw checkpoint named, the pooler is kept with the tanh it was trained with."""
    from transformers import AutoConfig, RobertaForMaskedLM, RobertaModel

    from defsentflow.model import read_model_record

    torch.manual_seed(7)  # the toy SimCSE checkpoint: a RobertaModel whose pooler holds "SimCSE's MLP", no MLM head
    simcse = tmp_path / "unsup-simcse-roberta"
    RobertaModel(AutoConfig.from_pretrained(tiny_roberta_dir), add_pooling_layer=True).save_pretrained(simcse)
    for f in tiny_roberta_dir.glob("*.txt"):
        (simcse / f.name).write_bytes(f.read_bytes())
    for f in tiny_roberta_dir.glob("*token*.json"):
        (simcse / f.name).write_bytes(f.read_bytes())
    mlp = RobertaModel.from_pretrained(simcse).pooler.dense
    raw = RobertaForMaskedLM.from_pretrained(tiny_roberta_dir).lm_head.dense  # the raw checkpoint
    ours = prepare_backbone(simcse, device=CPU, word_head=False, use_pooler=True, mlm_dense_from=str(tiny_roberta_dir))
    assert (ours.pooler_source, ours.pooler_activation) == ("mlm_dense", "gelu")
    assert torch.equal(ours.pooler_dense().weight, raw.weight) and torch.equal(ours.pooler_dense().bias, raw.bias)
    kept = prepare_backbone(simcse, device=CPU, word_head=False, use_pooler=True)
    assert (kept.pooler_source, kept.pooler_activation) == ("checkpoint", "tanh")  # never SimCSE's MLP with GELU
    assert torch.equal(kept.pooler_dense().weight, mlp.weight)
    # training through the config: the saved model records GELU from the raw dense, and continuing it keeps both
    entries, defs = [e for e, _ in toy_pairs], [d for _, d in toy_pairs]
    em = encode_entry_matrix(simcse, entries, defs, "ac", device="cpu")
    cfg = TrainConfig(pooling="cls", batch_size=4, lr=1e-3, device="cpu", mlm_dense_from=str(tiny_roberta_dir))
    assert "mlm_dense_from" not in TrainConfig(device="cpu").model_dump()  # earlier artifact keys keep their hash
    train_encoder(cfg, simcse, defs, em.rows(entries), out_dir=tmp_path / "m", checkpoint_dir=tmp_path / "ck",
                  entry_matrix=em.matrix)
    rec = read_model_record(tmp_path / "m")
    assert (rec.pooler_source, rec.pooler_activation) == ("mlm_dense", "gelu")
    again = prepare_backbone(tmp_path / "m", device=CPU, word_head=False, use_pooler=True,
                             mlm_dense_from=str(tiny_roberta_dir))
    assert (again.pooler_source, again.pooler_activation) == ("checkpoint", "gelu")
    assert not torch.equal(again.pooler_dense().weight, raw.weight)  # trained, not copied again


def test_bert_keeps_its_checkpoint_pooler(tiny_bert_dir):
    from transformers import BertModel

    ref = BertModel.from_pretrained(tiny_bert_dir)
    prepared = prepare_backbone(tiny_bert_dir, device=CPU, word_head=False, use_pooler=True)
    assert prepared.pooler_source == "checkpoint" and prepared.adapter.pooler_activation == "tanh"
    assert torch.equal(prepared.pooler_dense().weight, ref.pooler.dense.weight)


def test_a_bert_without_a_trained_pooler_gets_the_mlm_dense_as_roberta_does(tiny_mlm_dir, caplog):
    """A masked-LM-only BERT (issue 37): its pooler from the MLM head's dense layer with GELU by
    default; untrained_pooler="random" keeps random weights, and says so."""
    from transformers import BertForMaskedLM

    ref = BertForMaskedLM.from_pretrained(tiny_mlm_dir)
    prepared = prepare_backbone(tiny_mlm_dir, device=CPU, word_head=False, use_pooler=True)
    assert (prepared.pooler_source, prepared.pooler_activation) == ("mlm_dense", "gelu")
    dense = ref.cls.predictions.transform.dense
    assert torch.equal(prepared.pooler_dense().weight, dense.weight) and torch.equal(prepared.pooler_dense().bias, dense.bias)
    with caplog.at_level("WARNING"):
        rand = prepare_backbone(tiny_mlm_dir, device=CPU, word_head=False, use_pooler=True, untrained_pooler="random")
    assert (rand.pooler_source, rand.pooler_activation) == ("random", "tanh")
    assert "starts from random weights" in caplog.text
    texts = ["a small dog", "the king of the country"]
    pooled = encode_texts(str(tiny_mlm_dir), texts, pooling="mean", device="cpu")
    with torch.no_grad():
        expected = F.gelu(dense(torch.from_numpy(pooled))).numpy()
    np.testing.assert_allclose(sentence_head_vectors(tiny_mlm_dir, texts, "mean", True, device="cpu"), expected, atol=1e-5)


def test_continuing_a_model_keeps_the_pooler_activation_it_was_trained_with(tiny_mlm_dir, toy_pairs, tmp_path):
    """A masked-LM-only BERT trains through GELU (its pooler from the MLM dense); the step-1 model is
    saved with pooler weights, so continuing it must not switch to BERT's tanh (issue 41)."""
    from defsentflow.model import read_model_record

    entries, defs = [e for e, _ in toy_pairs], [d for _, d in toy_pairs]
    em = encode_entry_matrix(tiny_mlm_dir, entries, defs, "amp", device="cpu")
    cfg = TrainConfig(pooling="mean", batch_size=4, lr=1e-3, device="cpu", epochs=1)
    first, second = tmp_path / "step1", tmp_path / "step2"
    train_encoder(cfg, tiny_mlm_dir, defs, em.rows(entries), out_dir=first, checkpoint_dir=tmp_path / "c1",
                  entry_matrix=em.matrix)
    assert read_model_record(first).pooler_activation == "gelu"
    continued = prepare_backbone(first, device=CPU, word_head=False, use_pooler=True)
    assert (continued.pooler_source, continued.pooler_activation) == ("checkpoint", "gelu")
    train_encoder(cfg, first, defs, em.rows(entries), out_dir=second, checkpoint_dir=tmp_path / "c2",
                  entry_matrix=em.matrix)
    assert read_model_record(second).pooler_activation == "gelu"


def test_unknown_family_names_the_supported_ones():
    with pytest.raises(ValueError, match=r"no backbone adapter for model type 'gpt2'; supported: \['bert'"):
        adapter_for("gpt2")


def test_fused_cpu_encoding_matches_the_plain_forward_for_roberta(tiny_roberta_dir, monkeypatch):
    from defsentflow.encoders import load_encoder
    from defsentflow.encoders.encoding import FusedAddNorm, inference_model

    enc = load_encoder(tiny_roberta_dir, device="cpu")
    fast_model = inference_model(enc.model, CPU)
    assert sum(isinstance(m, FusedAddNorm) for m in fast_model.modules()) == 4  # 2 layers x (attention, ffn)
    texts = ["a small dog", "the king of the country", "a red round fruit from a tree"]
    fast = encode_texts(enc, texts, pooling="mean")
    monkeypatch.setenv("DEFSENTFLOW_FUSED_LINEAR", "0")
    np.testing.assert_allclose(fast, encode_texts(enc, texts, pooling="mean"), atol=1e-5)
