"""Pooling of the last hidden states into one sentence vector."""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

import torch

from defsentflow.config_tools import Pooling
from defsentflow.encoders.sbert_wk import sbert_wk_mean_pool, sbert_wk_pool

__all__ = ["Pooling", "POOLINGS", "PROMPT_TEMPLATE", "validate_pooling", "pool", "apply_prompt", "needs_hidden_states"]

POOLINGS: tuple[str, ...] = get_args(Pooling)

# PromptBERT's template as DefSent+'s reference writes it (defsentplus/model.py, trailing space
# included: RoBERTa's byte-level BPE reads it as a token, BERT's WordPiece drops it); the sentence
# replaces {sentence}, the tokenizer's mask token {mask}.
PROMPT_TEMPLATE = 'This sentence : "{sentence}" means {mask} . '


def validate_pooling(pooling: str) -> Pooling:
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    return pooling  # type: ignore[return-value]


def needs_hidden_states(pooling: str) -> bool:
    return pooling == "sbert_wk"


def apply_prompt(texts: Sequence[str], mask_token: str) -> list[str]:
    """Wrap each text in the prompt template (prompt pooling reads the mask token's state)."""
    return [PROMPT_TEMPLATE.format(sentence=t, mask=mask_token) for t in texts]


def pool(last_hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str, *,
         input_ids: torch.Tensor | None = None, mask_token_id: int | None = None,
         hidden_states: Sequence[torch.Tensor] | None = None) -> torch.Tensor:
    """Pool token states ``[B, T, H]`` into ``[B, H]``.

    ``cls`` takes the first token (``<s>`` for RoBERTa); ``mean`` and ``max`` respect the
    attention mask; ``prompt`` takes the state at the mask token of the prompt template (the
    texts must have been wrapped with :func:`apply_prompt`); ``sbert_wk`` needs all layers;
    ``sbert_wk_mean`` is SBERT-WK's mean baseline (the final ``[SEP]`` left out).
    """
    if pooling == "cls":
        return last_hidden[:, 0]
    mask = attention_mask.unsqueeze(-1).to(last_hidden.dtype)
    if pooling == "mean":
        return (last_hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    if pooling == "max":
        filled = last_hidden.masked_fill(mask == 0, torch.finfo(last_hidden.dtype).min)
        return filled.max(1).values
    if pooling == "prompt":
        if input_ids is None or mask_token_id is None:
            raise ValueError("prompt pooling needs input_ids and the tokenizer's mask_token_id")
        is_mask = input_ids == mask_token_id
        if not bool(is_mask.any(1).all()):
            raise ValueError("prompt pooling: a text has no mask token (was it truncated?)")
        # The template's mask is the last mask token in the sequence.
        idx = is_mask.shape[1] - 1 - is_mask.flip(1).to(torch.int64).argmax(1)
        return last_hidden[torch.arange(last_hidden.shape[0], device=last_hidden.device), idx]
    if pooling == "sbert_wk_mean":
        return sbert_wk_mean_pool(last_hidden, attention_mask)
    if pooling == "sbert_wk":
        if hidden_states is None:
            raise ValueError("sbert_wk pooling needs all hidden states (output_hidden_states=True)")

        return sbert_wk_pool(hidden_states, attention_mask)
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
