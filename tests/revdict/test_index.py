"""Reverse-dictionary serving: the faiss index gives brute-force top-k and is built once."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.revdict import RevdictIndex, build_revdict_index, resolve_mode


def _table():
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))
    rng = np.random.default_rng(5)
    entries, defs = [], []
    for i, w in enumerate(words[:70]):
        for _ in range(1 + i % 3):
            entries.append(w)
            defs.append(" ".join(rng.choice(words, size=int(rng.integers(3, 9)))))
    return pa.table({"entry": entries, "definition": defs, "split": ["train"] * len(entries)})


def test_faiss_topk_equals_brute_force(tiny_bert_dir, home):
    from defsentflow.encoders import encode_texts, load_encoder

    table = _table()
    idx = build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu")
    assert idx.meta["mode"] == "cosine" and idx.index.ntotal == len(set(table.column("entry").to_pylist()))
    # Brute force: entry means of per-definition vectors, normalised; cosine with normalised queries.
    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    entries = sorted(set(table.column("entry").to_pylist()))
    rows = list(zip(table.column("entry").to_pylist(), table.column("definition").to_pylist()))
    means = np.stack([encode_texts(enc, [d for e2, d in rows if e2 == e], pooling="mean", max_length=64).mean(0)
                      for e in entries])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    queries = ["a small animal that lives in a house", "water where fish live", "the king of a country"]
    qv = encode_texts(enc, queries, pooling="mean", max_length=64, normalize=True)
    brute = qv @ means.T
    got = idx.search(queries, k=10)
    for i, hits in enumerate(got):
        order = np.argsort(-brute[i], kind="stable")[:10]
        assert [e for e, _ in hits] == [entries[j] for j in order]
        np.testing.assert_allclose([s for _, s in hits], brute[i][order], atol=1e-5)


def test_index_is_cached_and_reloadable(tiny_bert_dir, home, monkeypatch):
    table = _table()
    first = build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu")

    def boom(*a, **k):
        raise AssertionError("the cached index must not re-encode the dictionary")

    with monkeypatch.context() as m:
        m.setattr("defsentflow.revdict.index._entry_matrix", boom)
        again = build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu")
    assert again.path == first.path and str(first.path).startswith(str(home))
    assert RevdictIndex(first.path).entries == first.entries
    # A dictionary with one more entry is a different index (served without retraining).
    bigger = pa.concat_tables([table, pa.table({"entry": ["zebra"], "definition": ["a striped animal"],
                                                "split": ["train"]})])
    new = build_revdict_index(str(tiny_bert_dir), bigger, mode="cosine", device="cpu")
    assert str(new.path).startswith(str(home))
    assert new.path != first.path and "zebra" in new.entries


def test_resolve_mode():
    assert resolve_mode("auto", {}) == "cosine"
    assert resolve_mode("auto", {"entry_encoder": "minilm"}) == "head"
    with pytest.raises(ValueError, match="mode must be"):
        resolve_mode("dot", {})
