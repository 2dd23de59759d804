"""The batched encoding engine used everywhere (entry embeddings, evaluation, harvesting).

Texts are de-duplicated, looked up in the embedding cache, tokenised once without padding,
sorted by length and cut into batches padded only to their own longest text, then run under
``torch.inference_mode`` (and bf16/fp16 autocast where asked and supported).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import torch

from defsentflow.encoders.cache import EmbeddingCache, text_keys
from defsentflow.encoders.loading import Autocast, LoadedEncoder, autocast_context, load_encoder, model_content_hash
from defsentflow.encoders.pooling import apply_prompt, needs_hidden_states, pool, validate_pooling
from defsentflow.progress import progress

__all__ = ["encode_texts", "encode_batch", "tokenize_sorted", "pad_batch"]


def tokenize_sorted(tokenizer, texts: Sequence[str], max_length: int) -> tuple[list[list[int]], np.ndarray]:
    """Token ids of each text (with special tokens, truncated) and the longest-first order."""
    ids = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=max_length,
                    return_attention_mask=False, return_token_type_ids=False)["input_ids"]
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    order = np.argsort(-lengths, kind="stable")
    return ids, order


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """Pad to the batch's own longest sequence."""
    n, width = len(seqs), max(len(s) for s in seqs)
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, s in enumerate(seqs):
        input_ids[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        mask[i, : len(s)] = 1
    return {"input_ids": input_ids.to(device), "attention_mask": mask.to(device)}


def encode_batch(enc: LoadedEncoder, batch: dict[str, torch.Tensor], pooling: str) -> torch.Tensor:
    """Forward one padded batch and pool it (gradients flow if the caller enables them)."""
    hidden = needs_hidden_states(pooling)
    out = enc.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    output_hidden_states=hidden, return_dict=True)
    return pool(out.last_hidden_state, batch["attention_mask"], pooling, input_ids=batch["input_ids"],
                mask_token_id=getattr(enc.tokenizer, "mask_token_id", None),
                hidden_states=out.hidden_states if hidden else None)


def encode_texts(encoder: LoadedEncoder | str | os.PathLike, texts: Sequence[str], *, pooling: str = "mean",
                 batch_size: int = 128, max_length: int = 128, autocast: Autocast = "none",
                 normalize: bool = False, cache: bool | str | os.PathLike = False, device: str = "auto",
                 desc: str = "encoding") -> np.ndarray:
    """Encode ``texts`` into a float32 array ``[len(texts), hidden]``.

    Args:
        encoder: a loaded encoder or anything :func:`load_encoder` accepts.
        pooling: ``cls``, ``mean``, ``max``, ``prompt`` or ``sbert_wk``.
        cache: False, True (the data root's cache) or a data-root path; vectors are cached by
            (model content hash, pooling/max_length/autocast spec, text hash).

    Example:
        >>> vecs = encode_texts("minilm", ["a small dog", "a puppy"], pooling="mean")
    """
    validate_pooling(pooling)
    enc = encoder if isinstance(encoder, LoadedEncoder) else load_encoder(encoder, device=device)
    texts = list(texts)
    if not texts:
        return np.zeros((0, enc.hidden_size), dtype=np.float32)
    unique, inverse = np.unique(np.array(texts, dtype=object), return_inverse=True)
    unique = unique.tolist()
    store = None
    if cache:
        from defsentflow.storage.paths import data_root

        root = data_root(None if cache is True else cache)
        spec = f"{pooling}-L{max_length}-{autocast}"
        store = EmbeddingCache(root, model_content_hash(enc.path), spec)
        keys = text_keys(unique)
        found, cached = store.lookup(keys)
    else:
        found, cached = np.zeros(len(unique), dtype=bool), None
    out = np.zeros((len(unique), enc.hidden_size), dtype=np.float32)
    if cached is not None:
        out[found] = cached
    todo = np.flatnonzero(~found)
    if len(todo):
        todo_texts = [unique[i] for i in todo]
        model_texts = apply_prompt(todo_texts, enc.tokenizer.mask_token) if pooling == "prompt" else todo_texts
        ids, order = tokenize_sorted(enc.tokenizer, model_texts, max_length)
        pad_id = enc.tokenizer.pad_token_id if enc.tokenizer.pad_token_id is not None else 0
        was_training = enc.model.training
        enc.model.eval()
        bar = progress(total=len(todo), desc=desc, unit="text")
        with torch.inference_mode(), autocast_context(enc.device, autocast):
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                batch = pad_batch([ids[i] for i in idx], pad_id, enc.device)
                vec = encode_batch(enc, batch, pooling)
                out[todo[idx]] = vec.float().cpu().numpy()
                bar.update(len(idx))
        bar.close()
        enc.model.train(was_training)
        if store is not None:
            store.add(keys[todo], out[todo])
    result = out[inverse]
    if normalize:
        result /= np.linalg.norm(result, axis=1, keepdims=True).clip(min=1e-12)
    return result
