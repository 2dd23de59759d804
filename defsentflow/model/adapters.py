"""Backbone adapters: the only place where BERT and RoBERTa differ.

A backbone differs in three ways that matter to DefSent and DefSent+: where its pretrained
word-prediction layer (masked-LM head) lives, which activation its pooler uses, and whether the
pooler was ever trained. BERT's pooler (dense + tanh) was trained by next-sentence prediction;
RoBERTa's never was, so DefSent+ initialises it from the MLM head's dense layer and uses GELU,
as that dense layer was trained with GELU. A checkpoint of any family whose pooler was never
trained (a BERT pretrained by masked-LM alone) is in RoBERTa's position: by default
(``untrained_pooler="mlm_dense"``) its pooler starts from the MLM head's dense layer with GELU too;
``"random"`` keeps random weights (with a warning), as does a checkpoint without an MLM head.
A RoBERTa-like checkpoint further trained elsewhere (SimCSE, SNCSE) stores its own MLP as the pooler
and no MLM head: DefSent+'s reference (``TrainEncoder.py:112-118``) replaces that pooler by the raw
``roberta-*`` checkpoint's ``lm_head.dense`` with GELU, which ``mlm_dense_from`` names; without it the
checkpoint's pooler is kept with tanh, the activation it was trained with (Hugging Face's pooler, SimCSE's MLP).

:func:`prepare_backbone` loads a checkpoint once for training or head-mode encoding; the device
is always passed in.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from defsentflow.encoders.loading import (
    LoadedEncoder,
    has_mlm_head,
    load_encoder,
    model_construction,
    resolve_model_path,
)
from defsentflow.model import model_head

__all__ = [
    "ADAPTERS",
    "BackboneAdapter",
    "Decoder",
    "PreparedBackbone",
    "UntrainedPooler",
    "activation_fn",
    "adapter_for",
    "checkpoint_has_pooler",
    "prepare_backbone",
]

log = logging.getLogger(__name__)

PoolerActivation = Literal["tanh", "gelu"]
Decoder = Literal["mlm_head", "input_embeddings"]
UntrainedPooler = Literal["mlm_dense", "random"]  # a pooler the checkpoint never trained: from the MLM dense, or random

_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"tanh": torch.tanh, "gelu": F.gelu}


def activation_fn(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The pooler activation called ``name`` (``tanh`` or ``gelu``)."""
    if name not in _ACTIVATIONS:
        raise ValueError(f"pooler activation must be one of {tuple(_ACTIVATIONS)}, got {name!r}")
    return _ACTIVATIONS[name]


@dataclass(frozen=True)
class BackboneAdapter:
    """What differs between backbone families.

    Attributes:
        family: ``config.model_type`` this adapter serves.
        mlm_head_attr: attribute of the ``*ForMaskedLM`` model holding the word-prediction
            layer (transform + decoder tied to the word embeddings + bias).
        pooler_activation: activation applied after the pooler's dense layer.
        pooler_from_mlm_dense: whether the pooler is initialised from the MLM head's dense layer.
    """

    family: str
    mlm_head_attr: str
    pooler_activation: PoolerActivation
    pooler_from_mlm_dense: bool

    def word_prediction_layer(self, mlm_model: nn.Module) -> nn.Module:
        return getattr(mlm_model, self.mlm_head_attr)

    def mlm_dense(self, mlm_model: nn.Module) -> nn.Linear:
        """The dense layer of the MLM head's transform (BERT: ``cls.predictions.transform.dense``;
        RoBERTa: ``lm_head.dense``)."""
        head = self.word_prediction_layer(mlm_model)
        head = getattr(head, "predictions", head)
        return head.transform.dense if hasattr(head, "transform") else head.dense

    def copy_mlm_dense_into_pooler(self, backbone: nn.Module, mlm_model: nn.Module) -> None:
        dense = self.mlm_dense(mlm_model)
        with torch.no_grad():
            backbone.pooler.dense.weight.copy_(dense.weight)
            backbone.pooler.dense.bias.copy_(dense.bias)


_BERT = BackboneAdapter("bert", "cls", "tanh", False)
_ROBERTA = BackboneAdapter("roberta", "lm_head", "gelu", True)
ADAPTERS: dict[str, BackboneAdapter] = {
    "bert": _BERT,
    "roberta": _ROBERTA,
    "xlm-roberta": BackboneAdapter("xlm-roberta", "lm_head", "gelu", True),
    "camembert": BackboneAdapter("camembert", "lm_head", "gelu", True),
}


def adapter_for(family: str) -> BackboneAdapter:
    """The adapter for a ``config.model_type``; an unknown family is an error naming the known ones."""
    try:
        return ADAPTERS[family]
    except KeyError:
        raise ValueError(f"no backbone adapter for model type {family!r}; supported: {sorted(ADAPTERS)}") from None


def checkpoint_has_pooler(path: str | os.PathLike) -> bool:
    """Whether the checkpoint's safetensors weights include trained pooler weights."""
    p = Path(resolve_model_path(path))
    files = list(p.glob("*.safetensors")) if p.is_dir() else []
    if not files:
        return False
    from safetensors import safe_open  # lazy: loads torch; only saving or loading weights needs it

    for f in files:
        with safe_open(str(f), "pt") as fh:
            if any(".pooler." in f".{k}" for k in fh.keys()):
                return True
    return False


@dataclass
class PreparedBackbone:
    """A backbone ready for DefSent/DefSent+ training or head-mode encoding.

    Attributes:
        encoder: the trainable backbone (``AutoModel`` with its pooler) and tokenizer.
        adapter: the family adapter.
        word_head: the frozen word-prediction layer, when asked for (``None`` otherwise).
        decoder: ``mlm_head`` or ``input_embeddings`` (checkpoint without an MLM head: the
            frozen input word-embedding matrix serves as a bias-free decoder).
        pooler_source: ``checkpoint``, ``mlm_dense`` (RoBERTa, or a checkpoint without a trained
            pooler) or ``random`` (no trained pooler).
        pooler_activation: the activation after the pooler's dense layer: the family's for a
            checkpoint's own pooler, GELU for one taken from the MLM head's dense layer.
    """

    encoder: LoadedEncoder
    adapter: BackboneAdapter
    word_head: nn.Module | None
    decoder: Decoder | None
    pooler_source: str
    pooler_activation: PoolerActivation = "tanh"

    @property
    def backbone(self) -> nn.Module:
        return self.encoder.model

    def pooler_dense(self) -> nn.Linear:
        pooler = getattr(self.backbone, "pooler", None)
        if pooler is None:
            raise ValueError(f"{self.encoder.path}: the backbone has no pooler; use use_pooler=False")
        return pooler.dense


class EmbeddingDecoder(nn.Module):
    """A frozen bias-free decoder ``logits = h . E^T`` from the input word-embedding matrix."""

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", weight.detach().clone())

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden @ self.weight.to(hidden.dtype).T


def prepare_backbone(base_model: str | os.PathLike, *, device: torch.device, word_head: bool,
                     use_pooler: bool, untrained_pooler: UntrainedPooler = "mlm_dense",
                     mlm_dense_from: str | os.PathLike | None = None) -> PreparedBackbone:
    """Load ``base_model`` for training.

    Args:
        base_model: a model directory, hub id or bundled alias.
        device: where the backbone and the frozen head live.
        word_head: load the frozen word-prediction layer (DefSent).
        use_pooler: the pooler will be used; RoBERTa-like backbones then get theirs from the MLM
            head's dense layer.
        untrained_pooler: for a checkpoint without trained pooler weights: ``mlm_dense`` (the MLM
            head's dense layer, GELU, as RoBERTa) or ``random``.
        mlm_dense_from: the raw checkpoint whose MLM head's dense layer starts the pooler, with GELU,
            of a checkpoint not trained here (DefSent+'s reference for SimCSE / SNCSE RoBERTa: the
            raw ``roberta-*``); a model trained here keeps its own pooler.
    """
    if untrained_pooler not in ("mlm_dense", "random"):
        raise ValueError(f"untrained_pooler must be 'mlm_dense' or 'random', got {untrained_pooler!r}")
    enc = load_encoder(base_model, device=device)
    adapter = adapter_for(enc.family)
    mlm_available = has_mlm_head(enc.path)
    trained_pooler = checkpoint_has_pooler(enc.path)
    recorded = model_head(enc.path).pooler_activation if trained_pooler else None
    raw = mlm_dense_from if use_pooler and mlm_dense_from is not None and recorded is None else None
    from_mlm = (adapter.pooler_from_mlm_dense or (not trained_pooler and untrained_pooler == "mlm_dense")
                or raw is not None)
    need_mlm = word_head or (use_pooler and from_mlm and raw is None)
    from transformers import (
        AutoModelForMaskedLM,  # lazy: transformers takes seconds to load; only code that loads a model needs it
    )

    mlm_model = None
    if need_mlm and mlm_available:
        with model_construction():
            mlm_model = AutoModelForMaskedLM.from_pretrained(enc.path, use_safetensors=True)
    pooler_mlm = mlm_model
    if raw is not None:
        with model_construction():
            pooler_mlm = AutoModelForMaskedLM.from_pretrained(resolve_model_path(raw), use_safetensors=True)
        if pooler_mlm.config.hidden_size != enc.hidden_size:
            raise ValueError(f"mlm_dense_from {raw}: hidden size {pooler_mlm.config.hidden_size}, but {enc.path} "
                             f"has {enc.hidden_size}")
    pooler_source = "checkpoint" if trained_pooler else "random"
    if use_pooler and from_mlm:
        if getattr(enc.model, "pooler", None) is None:
            raise ValueError(f"{enc.path}: the backbone has no pooler; use use_pooler=False")
        if pooler_mlm is not None:
            adapter_for(pooler_mlm.config.model_type).copy_mlm_dense_into_pooler(enc.model, pooler_mlm)
            pooler_source = "mlm_dense"
    if use_pooler and pooler_source == "random":
        log.warning("%s has no trained pooler weights: the pooler starts from random weights", enc.path)
    # a checkpoint's own pooler was trained with tanh (Hugging Face's BertPooler and RobertaPooler, SimCSE's MLP)
    activation: PoolerActivation = {"mlm_dense": "gelu", "checkpoint": "tanh"}.get(pooler_source,
                                                                                  adapter.pooler_activation)
    if use_pooler and pooler_source == "checkpoint" and adapter.pooler_from_mlm_dense and recorded is None:
        log.warning("%s: a %s checkpoint with its own pooler and no MLM head keeps that pooler with tanh; "
                    "DefSent+'s reference replaces it by the raw model's lm_head.dense with GELU "
                    "(mlm_dense_from: the raw checkpoint)", enc.path, enc.family)
    if recorded is not None and not (use_pooler and from_mlm and pooler_mlm is not None):
        # a model trained here keeps the activation its pooler was trained with (continuing a
        # masked-LM-only BERT trained through GELU must not flip to BERT's tanh)
        activation = recorded  # type: ignore[assignment]
    head: nn.Module | None = None
    decoder: Decoder | None = None
    if word_head:
        if mlm_model is not None:
            head, decoder = adapter.word_prediction_layer(mlm_model), "mlm_head"
        else:
            head = EmbeddingDecoder(enc.model.get_input_embeddings().weight)
            decoder = "input_embeddings"
            log.info("%s has no MLM head: its frozen input word embeddings serve as the decoder", enc.path)
        head.requires_grad_(False)
        head.eval()
        head.to(enc.device)
    return PreparedBackbone(encoder=enc, adapter=adapter, word_head=head, decoder=decoder, pooler_source=pooler_source,
                            pooler_activation=activation)
