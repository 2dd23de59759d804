"""Dataset variants: which entries a DefSent+ variant keeps.

Variant ``c`` keeps only entries that are one whole token of a tokenizer's vocabulary, as the
DefSent models predict the entry from a single vocabulary slot.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from defsentflow.storage import hash_file, hash_text

__all__ = ["whole_token_filter", "tokenizer_id"]

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt",
                    "special_tokens_map.json", "spiece.model", "sentencepiece.bpe.model", "added_tokens.json")


def tokenizer_id(name_or_path: str | None) -> str | None:
    """What a tokenizer contributes to an artifact key: the hash of its files for a local
    directory (so an edited vocabulary is a new key), else the name itself."""
    if name_or_path is None:
        return None
    p = Path(name_or_path)
    if p.is_dir():
        parts = [f"{n}:{hash_file(p / n)}" for n in _TOKENIZER_FILES if (p / n).is_file()]
        return "dir:" + hash_text("|".join(parts))
    return f"name:{name_or_path}"


def whole_token_filter(name_or_path: str | os.PathLike) -> Callable[[Sequence[str]], list[bool]]:
    """A function telling, for a batch of entries, which are one whole (non-unknown) token.

    The tokenizer is loaded with ``AutoTokenizer.from_pretrained(name_or_path)``.
    """
    from transformers import (
        AutoTokenizer,  # lazy: transformers takes seconds to load; only code that loads a model needs it
    )

    tok = AutoTokenizer.from_pretrained(str(name_or_path))
    unk = tok.unk_token_id

    def keep(entries: Sequence[str]) -> list[bool]:
        if not entries:
            return []
        ids = tok(list(entries), add_special_tokens=False)["input_ids"]
        return [len(x) == 1 and x[0] != unk for x in ids]

    return keep
