"""Save encoders in the sentence-transformers layout (``SentenceTransformer(path)`` loads them)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from defsentflow.storage.atomic import atomic_dir

__all__ = ["save_encoder", "ST_POOLING"]

# sentence-transformers pooling modes for ours; prompt and sbert_wk have no ST module, so the
# saved ST pipeline uses mean pooling and defsentflow.json records the training-time pooling.
ST_POOLING = {"cls": "cls", "mean": "mean", "max": "max", "prompt": "mean", "sbert_wk": "mean"}


def save_encoder(model: torch.nn.Module, tokenizer: Any, out_dir: str | os.PathLike, *, pooling: str = "mean",
                 max_seq_length: int = 256, meta: dict[str, Any] | None = None) -> Path:
    """Write a Hugging Face model + tokenizer + sentence-transformers modules, atomically.

    ``model`` is the backbone (``AutoModel``) with its pooler: the pooler stays with the model
    because the reverse dictionary's head mode uses it. ``meta`` goes to ``defsentflow.json``.
    """
    out = Path(out_dir)
    with atomic_dir(out) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        (tmp / "modules.json").write_text(json.dumps(modules, indent=2))
        (tmp / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length, "do_lower_case": False}, indent=2))
        (tmp / "1_Pooling").mkdir()
        mode = ST_POOLING[pooling]
        dim = int(model.config.hidden_size)
        pool_cfg = {
            "word_embedding_dimension": dim,
            "pooling_mode_cls_token": mode == "cls",
            "pooling_mode_mean_tokens": mode == "mean",
            "pooling_mode_max_tokens": mode == "max",
            "pooling_mode_mean_sqrt_len_tokens": False,
        }
        (tmp / "1_Pooling" / "config.json").write_text(json.dumps(pool_cfg, indent=2))
        (tmp / "defsentflow.json").write_text(json.dumps({"pooling": pooling, **(meta or {})}, indent=2, sort_keys=True, default=str))
    return out
