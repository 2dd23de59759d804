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


def test_hybrid_index_adds_the_headword_vectors(tiny_bert_dir, home):
    from defsentflow.encoders import encode_texts, load_encoder

    table = _table()
    idx = build_revdict_index(str(tiny_bert_dir), table, mode="hybrid", device="cpu")
    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    rows = list(zip(table.column("entry").to_pylist(), table.column("definition").to_pylist()))
    e = idx.entries[3]
    mean = encode_texts(enc, [d for e2, d in rows if e2 == e], pooling="mean", max_length=64).mean(0)
    word = encode_texts(enc, [e], pooling="mean", max_length=64)[0]
    np.testing.assert_allclose(idx.index.reconstruct(3), unit(unit(mean) + unit(word)), atol=1e-5)
    bigger = idx.add(pa.table({"entry": ["zebra"], "definition": ["a striped animal"]}), device="cpu")
    zebra = unit(unit(encode_texts(enc, ["a striped animal"], pooling="mean", max_length=64)[0])
                 + unit(encode_texts(enc, ["zebra"], pooling="mean", max_length=64)[0]))
    np.testing.assert_allclose(bigger.index.reconstruct(len(bigger.entries) - 1), zebra, atol=1e-5)


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
    assert resolve_mode("auto", None) == "cosine"
    assert resolve_mode("auto", "minilm") == "head"
    with pytest.raises(ValueError, match="mode must be"):
        resolve_mode("dot", None)


def test_resolve_mode_prefers_the_better_measured_mode():
    trained = "minilm"  # the entry encoder of a model trained against an entry head
    assert resolve_mode("auto", trained, {"head": 0.05, "cosine": 0.25}) == "cosine"
    assert resolve_mode("auto", trained, {"head": 0.31, "cosine": 0.25}) == "head"
    # a model without an entry head cannot serve head mode, whatever was recorded
    assert resolve_mode("auto", None, {"head": 0.9, "cosine": 0.2}) == "cosine"
    assert resolve_mode("head", trained, {"cosine": 0.9}) == "head"
    assert resolve_mode("auto", None, {"hybrid": 0.28, "cosine": 0.25}) == "hybrid"


def test_auto_mode_serves_the_measured_best(tiny_bert_dir, home, tmp_path):
    import json
    import shutil

    from defsentflow.revdict import measured_modes
    from defsentflow.storage import Catalog

    trained = tmp_path / "trained"  # a model with an entry head (what DefSent+ writes)
    shutil.copytree(tiny_bert_dir, trained)
    (trained / "defsentflow.json").write_text(json.dumps(
        {"pooling": "mean", "use_pooler": False, "entry_encoder": str(tiny_bert_dir), "entry_encoding": "amp"}))
    assert build_revdict_index(str(trained), _table(), mode="auto", device="cpu").meta["mode"] == "head"
    cat = Catalog()
    cat.register_model("trained", str(trained), method="pst")
    # dev figures choose; the test figures (which favour head) are never read by the choice
    cat.record_metrics("trained", [{"task": "revdict-dev", "setting": "cosine", "metric": "mrr", "value": 0.3, "n": 10},
                                   {"task": "revdict-dev", "setting": "head", "metric": "mrr", "value": 0.1, "n": 10},
                                   {"task": "revdict", "setting": "head", "metric": "mrr", "value": 0.9, "n": 10}])
    assert measured_modes(str(trained)) == {"cosine": 0.3, "head": 0.1}
    assert build_revdict_index(str(trained), _table(), mode="auto", device="cpu").meta["mode"] == "cosine"
    # changing only test-split figures changes no choice
    cat.record_metrics("trained", [{"task": "revdict", "setting": "cosine", "metric": "mrr", "value": 0.0, "n": 10},
                                   {"task": "revdict", "setting": "head", "metric": "mrr", "value": 1.0, "n": 10}])
    assert measured_modes(str(trained)) == {"cosine": 0.3, "head": 0.1}


def test_add_entries_without_retraining_encodes_only_the_new_definitions(tiny_bert_dir, home, monkeypatch):
    import defsentflow.revdict.index as index_mod
    from defsentflow.encoders import encode_texts, load_encoder

    table = _table()
    first = build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu")
    known = first.entries[0]
    new = pa.table({"entry": ["zebra", "zebra", known],
                    "definition": ["a striped animal like a horse", "a wild animal with black and white stripes",
                                   "a bird that can fly over the sea"]})
    encoded: list[list[str]] = []
    real = index_mod._encode_definitions

    def spy(spec, definitions, **kw):
        encoded.append(list(definitions))
        return real(spec, definitions, **kw)

    monkeypatch.setattr(index_mod, "_encode_definitions", spy)
    bigger = first.add(new, device="cpu")
    assert encoded == [new.column("definition").to_pylist()]  # the indexed dictionary is not re-encoded
    assert bigger.entries == first.entries + ["zebra"] and bigger.index.ntotal == first.index.ntotal + 1
    assert bigger.meta["extends"] == first.meta["key"]

    # The added entry's vector is the mean of its definitions; the known entry's mean includes the new one.
    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    zebra = encode_texts(enc, new.column("definition").to_pylist()[:2], pooling="mean", max_length=64).mean(0)
    zebra /= np.linalg.norm(zebra)
    got = bigger.index.reconstruct(len(bigger.entries) - 1)
    np.testing.assert_allclose(got, zebra, atol=1e-5)
    rows = [d for e, d in zip(table.column("entry").to_pylist(), table.column("definition").to_pylist()) if e == known]
    known_mean = encode_texts(enc, rows + [new.column("definition")[2].as_py()], pooling="mean", max_length=64).mean(0)
    np.testing.assert_allclose(bigger.index.reconstruct(0), known_mean / np.linalg.norm(known_mean), atol=1e-5)
    assert bigger.search(["a striped animal like a horse"], k=1)[0][0][0] == "zebra"

    # Later look-ups of the same model, dictionary and mode are served by the extension.
    monkeypatch.setattr(index_mod, "_entry_matrix", lambda *a, **k: (_ for _ in ()).throw(AssertionError("rebuilt")))
    again = build_revdict_index(str(tiny_bert_dir), table, mode="cosine", device="cpu")
    assert again.path == bigger.path and "zebra" in again.entries
    with pytest.raises(ValueError, match="empty entry or definition"):
        bigger.add(pa.table({"entry": ["x"], "definition": [" "]}), device="cpu")


def test_an_index_from_vectors_computed_elsewhere_is_served_like_a_built_one(tiny_bert_dir, home, tmp_path):
    from defsentflow.revdict import index as revdict_index
    from defsentflow.storage import Catalog

    rng = np.random.default_rng(9)
    vectors = rng.standard_normal((300, 32)).astype(np.float32)
    np.save(tmp_path / "v.npy", vectors)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")  # memory-mapped, as a million-entry matrix would be
    entries = [f"e{i}" for i in range(300)]
    idx = revdict_index.index_from_vectors(str(tiny_bert_dir), entries, mapped, name="vecs", root=home)
    assert idx.meta["mode"] == "cosine" and idx.index.ntotal == 300 and idx.meta["name"] == "vecs"
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    _, top = idx.search_vectors(unit[[5, 77]], k=1)
    assert [entries[j] for j in top[:, 0]] == ["e5", "e77"]
    assert idx.search(["a small dog"], k=3)[0]  # queries are encoded by the model
    [row] = Catalog(home).query("SELECT path FROM artifacts WHERE kind = 'revdict_index'")
    assert RevdictIndex(row["path"]).index.ntotal == 300
    again = revdict_index.index_from_vectors(str(tiny_bert_dir), entries, mapped, name="vecs", root=home)
    assert again.path == idx.path  # content-keyed
    with pytest.raises(ValueError, match="300 entries for 2 vectors"):
        revdict_index.index_from_vectors(str(tiny_bert_dir), entries, vectors[:2], name="x", root=home)
