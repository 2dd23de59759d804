"""An on-disk embedding cache keyed by (model content hash, pooling spec, text hash).

Each encoding call that computes new vectors appends one shard (``part-*.npz``: text hashes and
float32 vectors) written atomically, so concurrent writers never clash and a killed run loses at
most the shard it was writing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence

import numpy as np

from defsentflow.storage.atomic import atomic_path
from defsentflow.storage.hashing import hash_text
from defsentflow.storage.paths import root_place

__all__ = ["EmbeddingCache", "text_keys"]


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """16-byte text hashes as a fixed-width bytes array."""
    return np.array([bytes.fromhex(hash_text(t)) for t in texts], dtype="S16")


class EmbeddingCache:
    """Vectors for one (model, pooling spec) pair under ``root``."""

    def __init__(self, root: str | os.PathLike, model_hash: str, spec: str):
        self.dir = root_place(root, "embeddings", model_hash, spec)
        self._index: dict[bytes, tuple[int, int]] | None = None
        self._shards: list[np.ndarray] = []

    def _load(self) -> dict[bytes, tuple[int, int]]:
        if self._index is None:
            self._index, self._shards = {}, []
            if self.dir.is_dir():
                for f in sorted(self.dir.glob("part-*.npz")):
                    try:
                        with np.load(f) as z:
                            keys, vecs = z["keys"], z["vecs"]
                    except (OSError, ValueError, KeyError):
                        continue  # unreadable shard: its texts are simply encoded again
                    s = len(self._shards)
                    self._shards.append(vecs)
                    for i, k in enumerate(keys.tolist()):
                        self._index[k] = (s, i)
        return self._index

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Return (found mask, vectors for the found keys in order, or None)."""
        index = self._load()
        hits = [index.get(k) for k in keys.tolist()]
        found = np.array([h is not None for h in hits], dtype=bool)
        if not found.any():
            return found, None
        vecs = np.stack([self._shards[s][i] for h in hits if h is not None for s, i in [h]])
        return found, vecs

    def add(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        if len(keys) == 0:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        final = self.dir / f"part-{uuid.uuid4().hex}.npz"
        with atomic_path(final) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, keys=keys, vecs=vecs.astype(np.float32))
        index = self._load()
        s = len(self._shards)
        self._shards.append(vecs.astype(np.float32))
        for i, k in enumerate(keys.tolist()):
            index[k] = (s, i)
