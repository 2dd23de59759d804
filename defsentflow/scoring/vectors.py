"""Frozen sentence vectors for the discriminative scorer, and context vectors built from them.

Every corpus sentence is encoded once (mean pooling over the encoder's last layer, L2-normalised)
and the array is cached as ``.npy``; a context's vectors ``u_<`` and ``u_>`` are the means of
its sentences' vectors (zero when that side is empty), so screening a context costs no encoder
call at all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from defsentflow.encoders import encode_texts, resolve_model_path
from defsentflow.scoring.contexts import CorpusLayout
from defsentflow.storage import write_npy

__all__ = ["encode_sentences", "context_vectors", "cached_sentence_vectors"]


def encode_sentences(model: str | os.PathLike, texts: Sequence[str], *, batch_size: int = 128,
                     device: str = "auto") -> np.ndarray:
    """Mean-pooled, L2-normalised float32 vectors ``[len(texts), dim]``.

    The one place this package turns text into vectors, so the encoding engine can change
    without touching the scorers. Uses :func:`defsentflow.encoders.encode_texts`.
    """
    if not len(texts):
        raise ValueError("encode_sentences: no texts")
    return encode_texts(resolve_model_path(model), list(texts), pooling="mean", batch_size=batch_size,
                        normalize=True, device=device, desc="sentence vectors").astype(np.float32)


def cached_sentence_vectors(path: str | os.PathLike, model: str | os.PathLike, texts: Sequence[str], *,
                            batch_size: int = 128, device: str = "auto") -> np.ndarray:
    """Load ``path`` (``.npy``) if it exists with ``len(texts)`` rows, else encode and write it atomically."""
    path = Path(path)
    if path.exists():
        vecs = np.load(path, mmap_mode="r")
        if vecs.shape[0] == len(texts):
            return np.asarray(vecs)
    vecs = encode_sentences(model, texts, batch_size=batch_size, device=device)
    write_npy(vecs, path)
    return vecs


def context_vectors(layout: CorpusLayout, vectors: np.ndarray, context_ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(u_<, u_>)`` for each slot: the mean vector of the sentences on each side (zeros if none).

    ``vectors`` holds at least the corpus sentences' rows (ids ``0..N-1``).
    """
    ls, le, rs, re_ = layout.context_bounds(context_ids, k)
    dim = vectors.shape[1]
    left = np.zeros((len(ls), dim), dtype=np.float32)
    right = np.zeros((len(ls), dim), dtype=np.float32)
    for off in range(1, k + 1):  # k is small (1-3): k gathers beat a cumulative sum over the corpus
        for out, idx, ok in ((left, le - off, le - off >= ls), (right, rs + off - 1, rs + off - 1 < re_)):
            out[ok] += vectors[idx[ok]]
    nl = (le - ls).clip(min=1).astype(np.float32)[:, None]
    nr = (re_ - rs).clip(min=1).astype(np.float32)[:, None]
    return left / nl, right / nr
