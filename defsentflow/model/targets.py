"""Prediction targets: vocabulary ids for DefSent, entry rows for DefSent+."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["single_token_entries", "single_token_targets", "entry_targets"]


def single_token_targets(tokenizer, entries: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Which entries are one vocabulary token, and that token's id.

    The entry is tokenised on its own without special tokens, as the DefSent reference code does,
    with its tokenizer's ``add_prefix_space=True``: a byte-level BPE (RoBERTa) then reads the word
    as it occurs inside a sentence (``Ġword``), not as a text's first word; WordPiece and
    SentencePiece ignore the space. An entry that maps to the unknown token is not a target.

    Returns:
        ``(mask, ids)``: a bool array (True for single-token entries) and an int64 array of
        vocabulary ids (-1 where ``mask`` is False).
    """
    entries = list(entries)
    ids = np.full(len(entries), -1, dtype=np.int64)
    if not entries:
        return np.zeros(0, dtype=bool), ids
    # a byte-level BPE tokenizer has add_prefix_space (False unless it was loaded with it)
    prefix = " " if getattr(tokenizer, "add_prefix_space", True) is False else ""
    toks = tokenizer([prefix + e for e in entries], add_special_tokens=False, return_attention_mask=False,
                     return_token_type_ids=False)["input_ids"]
    unk = getattr(tokenizer, "unk_token_id", None)
    for i, t in enumerate(toks):
        if len(t) == 1 and t[0] != unk:
            ids[i] = t[0]
    return ids >= 0, ids


def single_token_entries(model: str, entries: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`single_token_targets` with the tokenizer of ``model`` (a folder or a name)."""
    from transformers import (
        AutoTokenizer,  # lazy: transformers takes seconds to load; only code that loads a model needs it
    )

    return single_token_targets(AutoTokenizer.from_pretrained(model), entries)


def entry_targets(row_of: dict[str, int], entries: Sequence[str]) -> np.ndarray:
    """Entry-matrix rows of ``entries``; an entry missing from the matrix is an error naming it."""
    out = np.empty(len(entries), dtype=np.int64)
    for i, e in enumerate(entries):
        try:
            out[i] = row_of[e]
        except KeyError:
            raise KeyError(f"entry {e!r} (record {i}) is not in the entry matrix") from None
    return out
