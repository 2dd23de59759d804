"""Length-bucketed batches: every example once, deterministic for the seed, less padding."""

from __future__ import annotations

import numpy as np
import torch

from defsentflow.training import length_bucketed_batches, tokenize_examples


def test_every_example_once_and_deterministic():
    lengths = np.random.default_rng(0).integers(3, 40, size=1003)
    a = length_bucketed_batches(lengths, 16, seed=1, epoch=0, chunk_batches=5)
    b = length_bucketed_batches(lengths, 16, seed=1, epoch=0, chunk_batches=5)
    assert len(a) == int(np.ceil(1003 / 16))
    assert sorted(np.concatenate(a).tolist()) == list(range(1003))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    other_epoch = length_bucketed_batches(lengths, 16, seed=1, epoch=1, chunk_batches=5)
    other_seed = length_bucketed_batches(lengths, 16, seed=2, epoch=0, chunk_batches=5)
    assert not all(np.array_equal(x, y) for x, y in zip(a, other_epoch))
    assert not all(np.array_equal(x, y) for x, y in zip(a, other_seed))


def test_bucketing_cuts_padding_and_shuffles_batch_order():
    lengths = np.random.default_rng(0).integers(3, 60, size=4000)
    def padded(batches):
        return sum(len(b) * lengths[b].max() for b in batches)
    bucketed = length_bucketed_batches(lengths, 32, seed=0, epoch=0, chunk_batches=50)
    plain = length_bucketed_batches(lengths, 32, seed=0, epoch=0, chunk_batches=1)
    assert padded(bucketed) < 0.75 * padded(plain)
    assert padded(bucketed) < 1.1 * lengths.sum()
    widths = [lengths[b].max() for b in bucketed]
    assert widths != sorted(widths) and widths != sorted(widths, reverse=True)  # batch order shuffled


def test_collate_pads_to_the_batch_longest(tiny_bert_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    ex = tokenize_examples(tok, ["a dog", "the small cat that lives in the house", "a cat"], [3, 4, 5], max_length=64)
    batch = ex.collate(np.array([0, 2]), torch.device("cpu"))
    assert batch["input_ids"].shape == (2, 4) and batch["labels"].tolist() == [3, 5]
    assert batch["attention_mask"].sum().item() == 8
