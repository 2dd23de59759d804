from __future__ import annotations

import random

from defsentflow.dictionary import assign_split, merge_records
from defsentflow.dictionary.records import DefinitionRecord


def _records(entries, source="tsv"):
    for i, e in enumerate(entries, 1):
        yield DefinitionRecord(e, f"first meaning of {e}", source, "d.tsv", i)
        yield DefinitionRecord(e, f"second meaning of {e}", source, "d.tsv", i)


def _words(n, seed):
    rng = random.Random(seed)
    return sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 12))) for _ in range(n)})


def test_split_is_by_entry_and_stable_when_entries_are_added():
    old = _words(3000, 1)
    new = [w for w in _words(3000, 2) if w not in set(old)]
    before = merge_records([("tsv", _records(old))]).definitions
    after = merge_records([("tsv", _records(sorted(old + new)))]).definitions
    split_before = dict(zip(before.column("entry").to_pylist(), before.column("split").to_pylist()))
    split_after = {}
    for e, s in zip(after.column("entry").to_pylist(), after.column("split").to_pylist()):
        assert split_after.setdefault(e, s) == s  # every definition of an entry in one split
    assert all(split_after[e] == s for e, s in split_before.items())
    assert all(assign_split(e, 0) == s for e, s in split_after.items())


def test_split_ratio_is_8_1_1_and_depends_on_the_seed():
    words = [f"word{i}" for i in range(30000)]
    shares = {s: 0 for s in ("train", "dev", "test")}
    for w in words:
        shares[assign_split(w, seed=0)] += 1
    # binomial standard deviations: 0.0023 (train), 0.0017 (dev, test); allow about 5 of them
    assert abs(shares["train"] / len(words) - 0.8) < 0.012
    assert abs(shares["dev"] / len(words) - 0.1) < 0.009
    assert abs(shares["test"] / len(words) - 0.1) < 0.009
    moved = sum(assign_split(w, seed=0) != assign_split(w, seed=1) for w in words)
    assert moved > 0.2 * len(words)  # independent draws disagree on 1 - (.64 + .01 + .01) = 34%
