"""Deterministic train/dev/test assignment, by entry (the default) or by gloss.

Each entry's split comes from a hash of ``(seed, entry)``, not from a shuffle: the same entry is
always in the same split for a seed, every definition of an entry shares it, and adding entries
to a dictionary never moves the old ones.

``split_by="gloss"`` hashes the (normalised) definition text instead: every occurrence of a gloss,
under any entry, lands in one split. WordNet shares a synset's gloss among all its lemmas, so a
split by entry trains a gloss under one lemma and tests it under another; a split by gloss is a
split by synset, and a test definition's text is never a training definition.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from defsentflow.dictionary.records import Split

__all__ = ["DEFAULT_RATIOS", "SPLIT_BY", "SplitBy", "assign_split", "split_rows"]

SplitBy = Literal["entry", "gloss"]
SPLIT_BY: tuple[str, ...] = ("entry", "gloss")

DEFAULT_RATIOS: tuple[float, float, float] = (0.8, 0.1, 0.1)
_SCALE = float(1 << 64)


def _split_position(entry: str, seed: int = 0) -> float:
    """A uniform number in [0, 1) fixed by ``(seed, entry)``."""
    digest = hashlib.blake2b(f"{seed}\x1f{entry}".encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def assign_split(entry: str, seed: int = 0, ratios: tuple[float, float, float] = DEFAULT_RATIOS) -> Split:
    """``train``, ``dev`` or ``test`` for ``entry`` (8:1:1 by default).

    Example:
        >>> assign_split("dog", seed=0) in ("train", "dev", "test")
        True
    """
    x = _split_position(entry, seed) * sum(ratios)
    if x < ratios[0]:
        return "train"
    if x < ratios[0] + ratios[1]:
        return "dev"
    return "test"


def split_rows(entries: Sequence[str], definitions: Sequence[str], split_by: SplitBy = "entry", seed: int = 0,
               ratios: tuple[float, float, float] = DEFAULT_RATIOS) -> list[Split]:
    """The split of each (entry, definition) row: by entry, or by the case-folded gloss text.

    Example:
        >>> split_rows(["car", "auto"], ["a motor vehicle", "a motor vehicle"], "gloss")[0] == \
        ...     split_rows(["car", "auto"], ["a motor vehicle", "a motor vehicle"], "gloss")[1]
        True
    """
    if split_by not in SPLIT_BY:
        raise ValueError(f"split_by must be one of {SPLIT_BY}, got {split_by!r}")
    keys = entries if split_by == "entry" else [" ".join(d.split()).casefold() for d in definitions]
    memo: dict[str, Split] = {}
    return [memo[k] if k in memo else memo.setdefault(k, assign_split(k, seed, ratios)) for k in keys]
