"""Approximate reverse-dictionary indexes: recall@10 against exact search on held-out queries."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.revdict import RevdictIndex, build_revdict_index
from defsentflow.revdict.ann import make_index, recall_at_k, set_search_breadth, tune_nprobe


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(64, dim))
    x = centres[rng.integers(0, 64, n)] + 0.6 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_tuned_approximate_index_reaches_099_recall_on_held_out_queries(kind):
    x = _clustered(8000, 32, 0)
    rng = np.random.default_rng(1)
    tune_q = x[rng.choice(len(x), 300)] + 0.2 * rng.normal(size=(300, 32)).astype(np.float32)
    held_out = x[rng.choice(len(x), 300)] + 0.2 * rng.normal(size=(300, 32)).astype(np.float32)
    exact, approx = make_index(x, "flat"), make_index(x, kind)
    breadth, recall = tune_nprobe(exact, approx, tune_q, start=4)
    assert recall >= 0.995 and recall == recall_at_k(exact, approx, tune_q)
    assert recall_at_k(exact, approx, held_out) >= 0.99
    set_search_breadth(approx, 1)
    assert recall_at_k(exact, approx, held_out) < 0.99  # the breadth matters: the check can fail


def test_bad_index_kind():
    with pytest.raises(ValueError, match="index kind must be one of"):
        make_index(np.zeros((3, 4), np.float32), "lsh")


def test_revdict_index_built_approximate_keeps_its_breadth(tiny_bert_dir, home):
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))
    rng = np.random.default_rng(3)
    entries = [words[i % len(words)] + str(i) for i in range(400)]
    defs = [" ".join(rng.choice(words, size=6)) for _ in entries]
    table = pa.table({"entry": entries, "definition": defs, "split": ["train"] * len(entries)})
    flat = build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu")
    ivf = build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu", index_kind="ivf")
    assert ivf.path != flat.path and ivf.meta["index_kind"] == "ivf" and ivf.meta["tuned_recall_at_10"] >= 0.995
    again = RevdictIndex(ivf.path)
    import faiss

    assert faiss.extract_index_ivf(again.index).nprobe == ivf.meta["breadth"]
    hits = again.search(defs[:5], k=3, device="cpu")
    assert all(len(h) == 3 and all(e in set(entries) for e, _ in h) for h in hits)
