"""The sharded entry-matrix build: bit-identical whatever the shard count, shards cached by content key."""

from __future__ import annotations

import numpy as np
import pytest

from defsentflow.encoders import load_encoder
from defsentflow.training import encode_entry_matrix
from defsentflow.training.entry_shards import build_entry_matrix_sharded, plan_entry_shards


def _pairs(toy_pairs):
    # more texts than one batch, so three shards get different batches
    entries = [e for e, _ in toy_pairs] * 3
    defs = [d if k == 0 else f"{d} variant {k}" for k in range(3) for _, d in toy_pairs]
    return entries, defs


def test_three_shards_equal_one_bit_for_bit(tiny_bert_dir, toy_pairs, tmp_path):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    entries, defs = _pairs(toy_pairs)
    calls: list[int] = []

    def recording_fan_out(fn, specs):
        calls.append(len(specs))
        return [fn(*s) for s in reversed(specs)][::-1]  # any execution order, results in submission order

    one_names, one = build_entry_matrix_sharded(enc, entries, defs, "amp", shards=1, cache_dir=tmp_path / "a", batch_size=4)
    three_names, three = build_entry_matrix_sharded(enc, entries, defs, "amp", shards=3, fan_out=recording_fan_out,
                                                    cache_dir=tmp_path / "b", batch_size=4, out=tmp_path / "m.npy")
    assert calls == [3] and one_names == three_names == list(dict.fromkeys(entries))
    assert one.dtype == np.float32 and one.tobytes() == np.asarray(three).tobytes()
    np.testing.assert_array_equal(np.load(tmp_path / "m.npy", mmap_mode="r"), one)
    ref = encode_entry_matrix(enc, entries, defs, "amp", batch_size=4)
    assert ref.entries == one_names
    np.testing.assert_allclose(ref.matrix, one, atol=1e-6)


def test_shards_partition_the_sorted_batches_and_are_cached(tiny_bert_dir, toy_pairs, tmp_path):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    entries, defs = _pairs(toy_pairs)
    unique, rows, specs = plan_entry_shards(enc, defs, shards=3, pooling="mean", batch_size=4, cache_dir=tmp_path)
    assert len(specs) == 3 and sum(s.rows for s in specs) == len(unique) == len(set(defs))
    assert sorted(rows.tolist()) == list(range(len(unique)))  # every text in exactly one shard, once
    lengths = [len(seq) for s in specs for b in s.batches for seq in b]
    assert lengths == sorted(lengths, reverse=True)  # contiguous blocks of the globally sorted batches
    build_entry_matrix_sharded(enc, entries, defs, "amp", shards=3, cache_dir=tmp_path, batch_size=4)
    stamps = {s.out: (tmp_path / s.out).stat().st_mtime_ns for s in specs}
    ran: list[str] = []

    def fan_out(fn, calls):
        ran.extend(c[0].out for c in calls)
        return [fn(*c) for c in calls]

    build_entry_matrix_sharded(enc, entries, defs, "amp", shards=3, fan_out=fan_out, cache_dir=tmp_path, batch_size=4)
    assert ran == list(stamps) and all((tmp_path / o).stat().st_mtime_ns == t for o, t in stamps.items())
    with pytest.raises(ValueError, match="shards must be at least 1"):
        plan_entry_shards(enc, defs, shards=0, pooling="mean", cache_dir=tmp_path)


def test_tokenization_is_cached_per_tokenizer(tiny_bert_dir, toy_pairs, tmp_path, monkeypatch):
    from defsentflow.training import entry_shards

    enc = load_encoder(tiny_bert_dir, device="cpu")
    entries, defs = _pairs(toy_pairs)
    first = plan_entry_shards(enc, defs, shards=2, pooling="mean", batch_size=4, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("tokens-*.arrow"))) == 1

    def no_tokenizing(*a, **k):
        raise AssertionError("tokenized again")

    monkeypatch.setattr(entry_shards, "tokenize_sorted", no_tokenizing)
    again = plan_entry_shards(enc, defs, shards=2, pooling="mean", batch_size=4, cache_dir=tmp_path)
    assert [s.batches for s in again[2]] == [s.batches for s in first[2]] and again[1].tolist() == first[1].tolist()
    with pytest.raises(AssertionError, match="tokenized again"):  # another max_length is another tokenization
        plan_entry_shards(enc, defs, shards=2, pooling="mean", max_length=16, batch_size=4, cache_dir=tmp_path)
