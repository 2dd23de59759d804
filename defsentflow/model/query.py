"""A model's query head: the sentence vector its training optimised (pooled, then through its pooler).

:func:`head_vector` is the one definition of ``h``: training's classifier
(:class:`defsentflow.training.heads.DefinitionClassifier`) scores it against its frozen head, the
reverse dictionary, word prediction and the served index read it through :class:`HeadQueryEncoder`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from defsentflow.encoders.encoding import encode_texts
from defsentflow.encoders.loading import Autocast, pick_device
from defsentflow.model.adapters import activation_fn, prepare_backbone
from defsentflow.model.head import model_head

__all__ = ["HeadQueryEncoder", "head_vector", "sentence_head_vectors"]


def head_vector(pooled: torch.Tensor, pooler_dense: nn.Linear | None, activation: str) -> torch.Tensor:
    """``h = activation(dense(pooled))`` through the pooler, or ``pooled`` itself without one."""
    if pooler_dense is None:
        return pooled
    return activation_fn(activation)(pooler_dense(pooled))


class HeadQueryEncoder:
    """Head-mode sentence vectors with the backbone loaded once (a server encodes many batches).

    Pooled, then through the pooler: a model trained here carries its pooler activation in its head
    (:func:`defsentflow.model.model_head`; GELU for RoBERTa); an untrained checkpoint gets what
    training would start from (a pooler it never trained, RoBERTa's included, from its MLM head's
    dense layer).

    Example:
        >>> enc = HeadQueryEncoder("storage/models/defsent-plus", "mean", use_pooler=True)
        >>> enc(["a young dog"]).shape
        (1, 384)
    """

    def __init__(self, model_dir: str | os.PathLike, pooling: str, use_pooler: bool, *, max_length: int = 64,
                 autocast: Autocast = "none", device: str = "auto"):
        self.device = pick_device(device)
        head = model_head(model_dir)
        self.prepared = prepare_backbone(model_dir, device=self.device, word_head=False,
                                         use_pooler=use_pooler and not head.trained)
        self.pooling, self.use_pooler, self.max_length, self.autocast = pooling, use_pooler, max_length, autocast
        self.dense = self.prepared.pooler_dense() if use_pooler else None
        self.activation = self.prepared.pooler_activation  # a trained pooler's: its record's (prepare_backbone)

    def __call__(self, texts: Sequence[str], batch_size: int = 128) -> np.ndarray:
        pooled = encode_texts(self.prepared.encoder, texts, pooling=self.pooling, batch_size=batch_size,
                              max_length=self.max_length, autocast=self.autocast)
        if not self.use_pooler:
            return pooled
        with torch.inference_mode():
            x = torch.from_numpy(pooled).to(self.device)
            out = [head_vector(x[i:i + 4096], self.dense, self.activation) for i in range(0, len(x), 4096)]
        return torch.cat(out).float().cpu().numpy() if out else np.zeros_like(pooled)


def sentence_head_vectors(model_dir: str | os.PathLike, texts: Sequence[str], pooling: str, use_pooler: bool, *,
                          batch_size: int = 128, max_length: int = 64, autocast: Autocast = "none",
                          device: str = "auto") -> np.ndarray:
    """Head-mode sentence vectors for the reverse dictionary (see :class:`HeadQueryEncoder`).

    Example:
        >>> h = sentence_head_vectors("storage/models/defsent-plus", ["a young dog"], "mean", True)
    """
    enc = HeadQueryEncoder(model_dir, pooling, use_pooler, max_length=max_length, autocast=autocast, device=device)
    return enc(texts, batch_size=batch_size)
