"""DefSent+ entry matrices (the one builder, training.entry_matrix.encode_entry_matrix) against the research code's slow per-entry loop; AC vs AMP; ICA; storage."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from defsentflow.encoders import load_encoder
from defsentflow.model.ica import IcaTransform
from defsentflow.training import EntryMatrix, encode_entry_matrix
from defsentflow.training.entry_shards import sum_entry_vectors


def slow_entry_embeddings(enc, entries, definitions, pooling):
    """The research code's way: one forward pass per entry, its definitions padded to its longest."""
    groups: dict[str, list[str]] = {}
    for e, d in zip(entries, definitions):
        groups.setdefault(e, []).append(d)
    out = {}
    enc.model.eval()
    with torch.no_grad():
        for e, defs in groups.items():
            b = enc.tokenizer(defs, padding=True, truncation=True, max_length=64, return_tensors="pt")
            hidden = enc.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state
            if pooling == "cls":
                v = hidden[:, 0]
            else:
                m = b["attention_mask"].unsqueeze(-1).float()
                v = (hidden * m).sum(1) / m.sum(1)
            out[e] = v.mean(0).numpy()
    return out


@pytest.mark.parametrize("encoding,pooling", [("amp", "mean"), ("ac", "cls")])
def test_matches_slow_per_entry_loop(tiny_bert_dir, toy_pairs, encoding, pooling):
    enc = load_encoder(tiny_bert_dir, device="cpu")
    entries, defs = [e for e, _ in toy_pairs], [d for _, d in toy_pairs]
    em = encode_entry_matrix(enc, entries, defs, encoding, batch_size=5)
    ref = slow_entry_embeddings(enc, entries, defs, pooling)
    assert em.entries == list(dict.fromkeys(entries))  # first-appearance order
    assert em.matrix.dtype == np.float32 and em.matrix.shape == (len(ref), 32)
    for i, e in enumerate(em.entries):
        np.testing.assert_allclose(em.matrix[i], ref[e], atol=1e-5)
    assert em.meta["encoding"] == encoding and em.meta["n_entries"] == len(ref)


def test_ac_and_amp_differ(tiny_bert_dir, toy_pairs):
    entries, defs = [e for e, _ in toy_pairs], [d for _, d in toy_pairs]
    ac = encode_entry_matrix(tiny_bert_dir, entries, defs, "ac", device="cpu")
    amp = encode_entry_matrix(tiny_bert_dir, entries, defs, "amp", device="cpu")
    assert ac.entries == amp.entries
    assert not np.allclose(ac.matrix, amp.matrix, atol=1e-3)


def test_bad_encoding_and_lengths(tiny_bert_dir):
    with pytest.raises(ValueError, match=r"encoding must be one of \('ac', 'amp'\)"):
        encode_entry_matrix(tiny_bert_dir, ["dog"], ["an animal"], "avg")
    with pytest.raises(ValueError, match="2 entries but 1 definitions"):
        encode_entry_matrix(tiny_bert_dir, ["dog", "cat"], ["an animal"])


def test_entry_means_against_loop():
    rng = np.random.default_rng(0)
    entries = list(rng.choice(["a", "b", "c", "d"], size=30))
    vecs = rng.normal(size=(30, 5)).astype(np.float32)
    names, matrix = sum_entry_vectors(entries, np.arange(len(entries)), lambda rows: vecs[rows], vecs.shape[1])
    assert names == list(dict.fromkeys(entries))
    for i, e in enumerate(names):
        np.testing.assert_allclose(matrix[i], vecs[[x == e for x in entries]].mean(0), rtol=1e-6, atol=1e-6)


def test_ica_shape_determinism_and_scale():
    from sklearn.decomposition import FastICA

    rng = np.random.default_rng(1)
    sources = rng.laplace(size=(300, 6))
    x = (sources @ rng.normal(size=(6, 6))).astype(np.float32)
    a, b = (IcaTransform.fit(x)(x).astype(np.float32) for _ in range(2))
    assert a.shape == x.shape and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    from sklearn.preprocessing import StandardScaler

    scaled = StandardScaler().fit_transform(x.astype(np.float64))  # the DefSent+ reference standardises first
    ref = FastICA(n_components=6, max_iter=1000, random_state=42, whiten="unit-variance").fit_transform(scaled)
    np.testing.assert_allclose(a, ref * 100, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(a.std(0), 100, rtol=1e-3)  # unit-variance components, times 100
    # The recovered components are the sources up to order, sign and scale.
    corr = np.abs(np.corrcoef(a.T, sources.T)[:6, 6:])
    assert (corr.max(1) > 0.95).all()
    with pytest.raises(ValueError, match="at least as many entries"):
        IcaTransform.fit(x[:4])


def test_build_with_ica(tiny_bert_dir):
    from tests.conftest import WORDS

    words = list(dict.fromkeys(WORDS))[20:60]  # 40 entries >= 32 dimensions
    entries = [w for w in words for _ in range(2)]
    defs = [f"{w} and the {words[(i * 7) % len(words)]}" for i, w in enumerate(entries)]
    em = encode_entry_matrix(tiny_bert_dir, entries, defs, "amp", ica=True, device="cpu")
    plain = encode_entry_matrix(tiny_bert_dir, entries, defs, "amp", device="cpu")
    np.testing.assert_allclose(em.matrix, IcaTransform.fit(plain.matrix)(plain.matrix), rtol=1e-4, atol=1e-2)
    assert em.meta["ica"] is True


def test_save_and_load_roundtrip(tiny_bert_dir, toy_pairs, tmp_path):
    em = encode_entry_matrix(tiny_bert_dir, [e for e, _ in toy_pairs], [d for _, d in toy_pairs], device="cpu")
    em.save(tmp_path / "em")
    assert sorted(p.name for p in (tmp_path / "em").iterdir()) == ["entries.parquet", "matrix.npy", "meta.json"]
    back = EntryMatrix.load(tmp_path / "em")
    assert back.entries == em.entries and back.meta == em.meta
    np.testing.assert_array_equal(back.matrix, em.matrix)
    np.testing.assert_array_equal(back.rows(["dog", "cat"]), [1, 0])
    with pytest.raises(KeyError, match="'zebra' \\(record 1\\)"):
        back.rows(["dog", "zebra"])
    with pytest.raises(FileNotFoundError, match="not an entry matrix"):
        EntryMatrix.load(tmp_path)


@pytest.mark.slow
def test_minilm_matches_slow_loop(minilm_dir, toy_pairs):
    enc = load_encoder(minilm_dir, device="cpu")
    entries, defs = [e for e, _ in toy_pairs], [d for _, d in toy_pairs]
    em = encode_entry_matrix(enc, entries, defs, "amp", batch_size=8)
    ref = slow_entry_embeddings(enc, entries, defs, "mean")
    for i, e in enumerate(em.entries):
        np.testing.assert_allclose(em.matrix[i], ref[e], atol=1e-5)
