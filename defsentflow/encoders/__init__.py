"""Encoder loading, pooling, the batched encoding engine and sentence-transformers export."""

from __future__ import annotations

from defsentflow.encoders.cache import EmbeddingCache
from defsentflow.encoders.encoding import encode_texts, pad_batch, tokenize_sorted
from defsentflow.encoders.export import save_encoder
from defsentflow.encoders.loading import (
    Autocast,
    LoadedEncoder,
    autocast_context,
    has_mlm_head,
    load_encoder,
    model_content_hash,
    pick_device,
    require_safetensors,
    resolve_model_path,
)
from defsentflow.encoders.pooling import POOLINGS, PROMPT_TEMPLATE, Pooling, apply_prompt, pool, validate_pooling

__all__ = [
    "Autocast",
    "EmbeddingCache",
    "LoadedEncoder",
    "POOLINGS",
    "PROMPT_TEMPLATE",
    "Pooling",
    "apply_prompt",
    "autocast_context",
    "encode_texts",
    "has_mlm_head",
    "load_encoder",
    "model_content_hash",
    "pad_batch",
    "pick_device",
    "pool",
    "require_safetensors",
    "resolve_model_path",
    "save_encoder",
    "tokenize_sorted",
    "validate_pooling",
]
