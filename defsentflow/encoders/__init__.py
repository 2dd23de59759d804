"""Encoder loading, pooling and the batched encoding engine (the model folder's writer is :mod:`defsentflow.model.export`)."""

from __future__ import annotations

import importlib
from typing import Any

# Each public name -> the module that defines it, imported on first use (PEP 562): the names stay
# importable from the package, while the model lookup and config checks load neither torch nor
# transformers (a typo in a config fails in a second, not after torch's import).
_WHERE = {
    "EmbeddingCache": "cache",
    "encode_texts": "encoding", "pad_batch": "encoding", "tokenize_sorted": "encoding",
    "Autocast": "loading", "LoadedEncoder": "loading", "autocast_context": "loading", "has_mlm_head": "loading",
    "load_encoder": "loading", "model_construction": "loading", "model_content_hash": "loading", "pick_device": "loading",
    "require_safetensors": "loading", "resolve_model_path": "loading",
    "POOLINGS": "pooling", "PROMPT_TEMPLATE": "pooling", "Pooling": "pooling", "apply_prompt": "pooling",
    "pool": "pooling", "validate_pooling": "pooling",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


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
    "model_construction",
    "model_content_hash",
    "pad_batch",
    "pick_device",
    "pool",
    "require_safetensors",
    "resolve_model_path",
    "tokenize_sorted",
    "validate_pooling",
]
