"""The batched encoding engine used everywhere (entry embeddings, evaluation, harvesting).

Texts are de-duplicated, looked up in the embedding cache, tokenised once without padding,
sorted by length and cut into batches padded only to their own longest text, then run under
``torch.inference_mode``. A batch holds at most ``batch_size`` texts and ``max_tokens`` padded
tokens, so long texts come in smaller batches: activations stay cache-sized on a CPU and
bounded on a GPU.

On a CPU the model runs as an inference copy (:func:`inference_model`): every ``nn.Linear``
becomes one oneDNN call with its bias (and BERT's intermediate GELU, or the residual add before
an output LayerNorm) fused in, which is markedly faster than PyTorch's default matmul followed by
separate bias, activation and add passes, with the same fp32 results up to summation order.
``autocast="bf16"`` makes that copy bf16 throughout;
``torch.autocast`` would instead re-cast every activation at every layer, which costs more on a
CPU than the bf16 matrix products save. Elsewhere ``autocast`` means ``torch.autocast``. Pooling
is always done in fp32.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import os
import weakref
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from defsentflow.encoders.cache import EmbeddingCache, text_keys
from defsentflow.encoders.loading import Autocast, LoadedEncoder, autocast_context, load_encoder, model_content_hash
from defsentflow.encoders.pooling import apply_prompt, needs_hidden_states, pool, validate_pooling
from defsentflow.progress import progress
from defsentflow.storage.paths import data_root

__all__ = ["cache_store", "encode_batch", "encode_texts", "inference_model", "tokenize_sorted", "pad_batch",
           "token_budget_batches"]

# Padded tokens per batch unless the caller says otherwise: ~2-4k rows keep a CPU matmul's
# operands in cache; a GPU is fine with it too.
DEFAULT_MAX_TOKENS = 4096


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


def token_budget_batches(lengths: np.ndarray, order: np.ndarray, batch_size: int, max_tokens: int) -> list[np.ndarray]:
    """Cut ``order`` (longest first) into batches of at most ``batch_size`` texts and ``max_tokens`` padded tokens."""
    batches, start, n = [], 0, len(order)
    while start < n:
        width = int(lengths[order[start]])  # the longest of the batch: the order is longest-first
        size = max(1, min(batch_size, max_tokens // max(1, width)))
        batches.append(order[start:start + size])
        start += size
    return batches


def _fused_linear_available() -> bool:
    return (os.environ.get("DEFSENTFLOW_FUSED_LINEAR", "1") != "0" and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


@functools.cache
def _fused_dtype_supported(dtype: torch.dtype | None) -> bool:
    """Whether this CPU's oneDNN runs the fused linears in ``dtype`` (None: fp32). bf16 needs
    AVX-512 (an AVX2-only CPU raises "could not create a primitive descriptor"): probed once on a
    tiny input, the same calls as :class:`FusedLinear` and :class:`FusedAddNorm`."""
    try:
        x = torch.ones(2, 8, 8, dtype=dtype or torch.float32)
        layer = nn.Linear(8, 8)
        FusedLinear(layer, gelu=True, dtype=dtype)(x)
        FusedLinear(layer, dtype=dtype)(x)
        block = nn.Module()
        block.dense = layer
        block.LayerNorm = nn.LayerNorm(8).to(dtype or torch.float32)
        FusedAddNorm(block, dtype=dtype)(x, x)
    except RuntimeError:
        return False
    return True


def _inference_weight(weight: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """The weight as the fused op wants it.

    fp32: the original storage (detach() shares it, so the copy sees later in-place updates);
    another dtype: a converted copy, pre-packed into oneDNN's blocked layout where possible
    (a few per cent faster).
    """
    if dtype is None:
        return weight.detach()
    w = weight.detach().to(dtype)
    reorder = getattr(torch.ops.mkldnn, "_reorder_linear_weight", None)
    if reorder is not None:
        try:
            return reorder(w, DEFAULT_MAX_TOKENS)
        except RuntimeError:
            pass
    return w


class FusedLinear(nn.Module):
    """An inference-only ``nn.Linear`` (optionally followed by exact GELU) as one oneDNN call."""

    def __init__(self, linear: nn.Linear, *, gelu: bool = False, dtype: torch.dtype | None = None):
        super().__init__()
        self.weight = _inference_weight(linear.weight, dtype)
        bias = linear.bias
        self.bias = None if bias is None else (bias.detach() if dtype is None else bias.detach().to(dtype))
        self.attr, self.algorithm = ("gelu", "none") if gelu else ("none", "")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.weight, self.bias, self.attr, [], self.algorithm)


class FusedAddNorm(nn.Module):
    """BERT's output block, ``LayerNorm(dropout(dense(x)) + residual)``, with the residual add fused into the linear."""

    def __init__(self, block: nn.Module, *, dtype: torch.dtype | None = None):
        super().__init__()
        dense = block.dense
        self.weight = _inference_weight(dense.weight, dtype)
        self.bias = dense.bias.detach() if dtype is None else dense.bias.detach().to(dtype)
        self.LayerNorm = block.LayerNorm  # cast with the rest of the model

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        x = torch.ops.mkldnn._linear_pointwise.binary(hidden_states.contiguous(), input_tensor.contiguous(),
                                                      self.weight, self.bias, "add")
        return self.LayerNorm(x)


def _is_add_norm_block(module: nn.Module) -> bool:
    """A BERT/RoBERTa ``*Output`` block: dense, dropout, LayerNorm over (hidden_states + input_tensor)."""
    if not type(module).__name__.endswith("Output"):
        return False
    if {n for n, _ in module.named_children()} != {"dense", "dropout", "LayerNorm"}:
        return False
    if type(module.dense) is not nn.Linear or module.dense.bias is None or not isinstance(module.LayerNorm, nn.LayerNorm):
        return False
    return list(inspect.signature(type(module).forward).parameters) == ["self", "hidden_states", "input_tensor"]


def _is_exact_gelu(act: object) -> bool:
    if isinstance(act, nn.GELU):
        return act.approximate == "none"
    return type(act).__name__ == "GELUActivation" and getattr(act, "act", None) is torch.nn.functional.gelu


def _build_inference_model(model: nn.Module, dtype: torch.dtype | None) -> nn.Module:
    # Share (not copy) the original tensors while copying the module tree; fused linears then
    # reference the same storage in fp32, or hold their own bf16 copies.
    memo = {id(t): t for t in list(model.parameters()) + list(model.buffers())}
    fast = copy.deepcopy(model, memo)
    fast.eval()
    if not _fused_dtype_supported(dtype):  # e.g. bf16 on an AVX2-only CPU: a plain copy in that dtype
        return _cast_copy(fast, dtype)
    for module in list(fast.modules()):  # BERT-style output blocks: the residual add goes into the linear
        for name, child in list(module.named_children()):
            if _is_add_norm_block(child):
                setattr(module, name, FusedAddNorm(child, dtype=dtype))
    for module in fast.modules():  # BERT-style intermediate: dense followed by exact GELU
        dense, act = getattr(module, "dense", None), getattr(module, "intermediate_act_fn", None)
        if type(dense) is nn.Linear and _is_exact_gelu(act):
            module.dense = FusedLinear(dense, gelu=True, dtype=dtype)
            module.intermediate_act_fn = nn.Identity()
    for module in list(fast.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Linear:
                setattr(module, name, FusedLinear(child, dtype=dtype))
    return _cast_copy(fast, dtype)


def _cast_copy(fast: nn.Module, dtype: torch.dtype | None) -> nn.Module:
    """``fast``'s remaining parameters and buffers (embeddings, LayerNorm; every layer when
    nothing was fused) as ``dtype`` copies; the original model's tensors are left alone."""
    if dtype is not None:
        for module in fast.modules():
            for name, p in list(module._parameters.items()):
                if p is not None and p.is_floating_point():
                    module._parameters[name] = nn.Parameter(p.detach().to(dtype), requires_grad=False)
            for name, b in list(module._buffers.items()):
                if b is not None and b.is_floating_point():
                    module._buffers[name] = b.detach().to(dtype)
    return fast


_INFERENCE_COPIES: weakref.WeakKeyDictionary[nn.Module, dict] = weakref.WeakKeyDictionary()


def inference_model(model: nn.Module, device: torch.device, autocast: Autocast = "none") -> nn.Module:
    """The fastest way to run ``model`` for inference on ``device`` (``model`` itself off the CPU).

    On a CPU with oneDNN: a cached copy with fused linears, sharing the fp32 weights or holding
    bf16 ones for ``autocast="bf16"``; it is rebuilt when the model's weights change.
    """
    if device.type != "cpu" or not _fused_linear_available():
        return model
    if any(p.dtype != torch.float32 for p in model.parameters()):
        return model  # already converted by the caller: run it as it is
    dtype = torch.bfloat16 if autocast == "bf16" else None
    stamp = tuple((t.data_ptr(), t._version) for t in model.parameters())
    entry = _INFERENCE_COPIES.setdefault(model, {})
    hit = entry.get(dtype)
    if hit is None or hit[0] != stamp:
        hit = (stamp, _build_inference_model(model, dtype))
        entry[dtype] = hit
    return hit[1]


def encode_batch(enc: LoadedEncoder, batch: dict[str, torch.Tensor], pooling: str, *,
                 model: nn.Module | None = None) -> torch.Tensor:
    """Forward one padded batch and pool it in fp32 (gradients flow if the caller enables them).

    ``model`` runs instead of ``enc.model`` (e.g. its :func:`inference_model`).
    """
    hidden = needs_hidden_states(pooling)
    out = (model or enc.model)(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               output_hidden_states=hidden, return_dict=True)
    states = out.hidden_states if hidden else None
    if states is not None and states[-1].dtype != torch.float32:
        states = tuple(h.float() for h in states)
    return pool(out.last_hidden_state.float(), batch["attention_mask"], pooling, input_ids=batch["input_ids"],
                mask_token_id=getattr(enc.tokenizer, "mask_token_id", None), hidden_states=states)


def cache_store(root: str | os.PathLike, model: str | os.PathLike, *, pooling: str, max_length: int,
                autocast: Autocast = "none", cpu_bf16: bool = False) -> EmbeddingCache:
    """The embedding cache :func:`encode_texts` keeps ``model``'s vectors in for these settings
    (``cache=``), under data root ``root``: one key per (model content, pooling, length, autocast)."""
    spec = f"{pooling}-L{max_length}-{autocast}" + ("w" if cpu_bf16 else "")
    return EmbeddingCache(root, model_content_hash(model), spec)


def encode_texts(encoder: LoadedEncoder | str | os.PathLike, texts: Sequence[str], *, pooling: str = "mean",
                 batch_size: int = 128, max_length: int = 128, autocast: Autocast = "none",
                 normalize: bool = False, cache: bool | str | os.PathLike = False, device: str = "auto",
                 desc: str = "encoding", max_tokens: int | None = None) -> np.ndarray:
    """Encode ``texts`` into a float32 array ``[len(texts), hidden]``.

    Args:
        encoder: a loaded encoder or anything :func:`load_encoder` accepts.
        pooling: ``cls``, ``mean``, ``max``, ``prompt`` or ``sbert_wk``.
        batch_size: at most this many texts per batch.
        autocast: ``bf16`` runs a bf16 copy of the model on a CPU (``torch.autocast``
            elsewhere); ``fp16`` applies on a GPU only.
        cache: False, True (the data root's cache) or a data-root path; vectors are cached by
            (model content hash, pooling/max_length/autocast spec, text hash).
        max_tokens: at most this many padded tokens per batch (default
            ``max(DEFAULT_MAX_TOKENS, batch_size * 16)``).

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
    cpu_bf16 = autocast == "bf16" and enc.device.type == "cpu"
    if cache:
        store = cache_store(data_root(None if cache is True else cache), enc.path, pooling=pooling,
                            max_length=max_length, autocast=autocast, cpu_bf16=cpu_bf16)
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
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        batches = token_budget_batches(lengths, order, batch_size, max_tokens or max(DEFAULT_MAX_TOKENS, batch_size * 16))
        was_training = enc.model.training
        enc.model.eval()
        bar = progress(total=len(todo), desc=desc, unit="text")
        context = contextlib.nullcontext() if cpu_bf16 else autocast_context(enc.device, autocast)
        with torch.inference_mode(), context:
            model = inference_model(enc.model, enc.device, autocast)
            for idx in batches:
                batch = pad_batch([ids[i] for i in idx], pad_id, enc.device)
                vec = encode_batch(enc, batch, pooling, model=model)
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
