"""Deterministic train/dev/test assignment by entry.

Each entry's split comes from a hash of ``(seed, entry)``, not from a shuffle: the same entry is
always in the same split for a seed, every definition of an entry shares it, and adding entries
to a dictionary never moves the old ones.
"""

from __future__ import annotations

import hashlib

from defsentflow.dictionary.records import Split

__all__ = ["DEFAULT_RATIOS", "assign_split", "split_position"]

DEFAULT_RATIOS: tuple[float, float, float] = (0.8, 0.1, 0.1)
_SCALE = float(1 << 64)


def split_position(entry: str, seed: int = 0) -> float:
    """A uniform number in [0, 1) fixed by ``(seed, entry)``."""
    digest = hashlib.blake2b(f"{seed}\x1f{entry}".encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def assign_split(entry: str, seed: int = 0, ratios: tuple[float, float, float] = DEFAULT_RATIOS) -> Split:
    """``train``, ``dev`` or ``test`` for ``entry`` (8:1:1 by default).

    Example:
        >>> assign_split("dog", seed=0) in ("train", "dev", "test")
        True
    """
    x = split_position(entry, seed) * sum(ratios)
    if x < ratios[0]:
        return "train"
    if x < ratios[0] + ratios[1]:
        return "dev"
    return "test"
