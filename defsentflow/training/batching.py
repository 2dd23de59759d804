"""Deterministic, length-bucketed batches of pre-tokenised texts.

Each epoch's plan depends only on (seed, epoch, lengths): shuffle, cut into chunks of
``chunk_batches`` batches, sort each chunk by length, cut it into batches and shuffle the batch
order. Batches are then padded to their own longest text, so a definition of 8 tokens is never
padded to the dataset's longest. A resumed run recomputes the same plan and skips the batches
already done, which makes the data position a single integer.

``chunk_batches=1`` is plain random batching (a permutation cut into batches, no length sort),
what DefSent+'s reference code does (``RandomSampler``); a config asks for it with ``batching:
random`` (``bucket_batches`` 1). DefSent's reference shuffles nothing: its ``DataLoader`` reads the
data file in order, so a word's definitions stay together in a batch; no option here reproduces
that order, and random batches are the closest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from defsentflow.encoders.encoding import pad_batch

__all__ = ["TokenizedExamples", "length_bucketed_batches", "tokenize_examples"]


def length_bucketed_batches(lengths: np.ndarray, batch_size: int, *, seed: int, epoch: int,
                            chunk_batches: int = 50) -> list[np.ndarray]:
    """Index arrays of one epoch's batches (every example exactly once)."""
    n = len(lengths)
    rng = np.random.default_rng([int(seed), int(epoch)])
    perm = rng.permutation(n)
    chunk = batch_size * max(1, int(chunk_batches))
    batches: list[np.ndarray] = []
    for start in range(0, n, chunk):
        idx = perm[start:start + chunk]
        if chunk_batches > 1:
            idx = idx[np.argsort(-lengths[idx], kind="stable")]
        batches.extend(idx[i:i + batch_size] for i in range(0, len(idx), batch_size))
    order = rng.permutation(len(batches)) if chunk_batches > 1 else np.arange(len(batches))
    return [batches[i] for i in order]


@dataclass
class TokenizedExamples:
    """Token ids (with special tokens, truncated, unpadded) and integer labels."""

    ids: list[list[int]]
    labels: np.ndarray
    pad_id: int

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.ids), dtype=np.int64, count=len(self.ids))

    def collate(self, idx: np.ndarray, device: torch.device) -> dict[str, torch.Tensor]:
        batch = pad_batch([self.ids[i] for i in idx], self.pad_id, device)
        batch["labels"] = torch.as_tensor(self.labels[idx], dtype=torch.long, device=device)
        return batch


def tokenize_examples(tokenizer, texts: Sequence[str], labels: Sequence[int], max_length: int) -> TokenizedExamples:
    """Tokenise once, without padding; padding happens per batch in :meth:`TokenizedExamples.collate`."""
    ids = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=max_length,
                    return_attention_mask=False, return_token_type_ids=False)["input_ids"]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return TokenizedExamples(ids=ids, labels=np.asarray(labels, dtype=np.int64), pad_id=pad_id)
