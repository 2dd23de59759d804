"""SBERT-WK pooling against a slow, obvious per-sentence/per-token/per-layer NumPy loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from defsentflow.encoders.sbert_wk import sbert_wk_pool, window_layers


def _reference(hidden_states, attention_mask, layer_start, window):
    """The paper's procedure written out one sentence, token and layer at a time (float64)."""
    hs = np.stack([h.double().numpy() for h in hidden_states], axis=1)  # [B, L+1, T, H]
    hs = hs[:, layer_start:]
    out = []
    for b in range(hs.shape[0]):
        n_tok = int(attention_mask[b].sum()) - 1  # without the final [SEP]
        fused, importance = [], []
        for t in range(n_tok):
            layers = hs[b, :, t, :]  # [n, H]
            n = layers.shape[0]
            align, novel = np.zeros(n), np.zeros(n)
            for k in range(n):
                left = [i for i in range(k - window, k) if i >= 0] if k - window >= 0 else []
                right = [i for i in range(k + 1, k + window + 1) if i < n]
                mat = np.stack([layers[i] for i in left + right] + [layers[k]], axis=1)  # [H, m]
                _, r_mat = np.linalg.qr(mat)
                r = r_mat[:, -1]
                cols = r_mat[:-1, :-1]
                mean_unit = np.mean([cols[:, j] / np.linalg.norm(cols[:, j]) for j in range(cols.shape[1])], axis=0)
                cos = mean_unit @ r[:-1] / np.linalg.norm(r[:-1])
                align[k] = 1.0 / (cos * mat.shape[1] * 2)
                novel[k] = abs(r[-1]) / np.linalg.norm(r)
            alpha = align / align.sum() + novel / novel.sum()
            alpha /= alpha.sum()
            fused.append(sum(alpha[k] * layers[k] for k in range(n)))
            sims = [layers[k] @ layers[k + 1] / (np.linalg.norm(layers[k]) * np.linalg.norm(layers[k + 1]))
                    for k in range(n - 1)]
            importance.append(np.var(sims))
        w = np.array(importance) / np.sum(importance)
        out.append(sum(w[t] * fused[t] for t in range(n_tok)))
    return np.stack(out)


def test_window_matches_python_slicing():
    assert window_layers(9, 0, 2) == [1, 2, 0]
    assert window_layers(9, 1, 2) == [2, 3, 1]  # left slice [-1:1] is empty in the reference
    assert window_layers(9, 5, 2) == [3, 4, 6, 7, 5]
    assert window_layers(9, 8, 2) == [6, 7, 8]


@pytest.mark.parametrize("layer_start,window", [(0, 2), (1, 1), (2, 2)])
def test_matches_reference_loop_on_random_states(layer_start, window):
    g = torch.Generator().manual_seed(0)
    b, t, h, n_states = 3, 7, 16, 6
    hidden = [torch.randn(b, t, h, generator=g) for _ in range(n_states)]
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] * 5 + [0] * 2])
    got = sbert_wk_pool(hidden, mask, layer_start=layer_start, context_window=window).numpy()
    ref = _reference(hidden, mask, layer_start, window)
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-5)


def test_matches_reference_loop_on_tiny_model(tiny_bert_dir):
    from defsentflow.encoders import encode_texts, load_encoder, pad_batch, tokenize_sorted

    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    texts = ["the cat is a small animal", "a dog", "people live in a house where the river is clear"]
    got = encode_texts(enc, texts, pooling="sbert_wk", batch_size=2)
    ids, _ = tokenize_sorted(enc.tokenizer, texts, 128)
    batch = pad_batch(ids, enc.tokenizer.pad_token_id, torch.device("cpu"))
    with torch.inference_mode():
        out = enc.model(**batch, output_hidden_states=True)
    # the tiny model has 3 hidden states: layer_start 4 falls back to the last three (start 0)
    ref = _reference(out.hidden_states, batch["attention_mask"], 0, 2)
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-5)


def test_padding_does_not_change_a_sentence():
    g = torch.Generator().manual_seed(1)
    hidden = [torch.randn(1, 5, 8, generator=g) for _ in range(5)]
    padded = [torch.cat([x, torch.randn(1, 3, 8, generator=g)], 1) for x in hidden]
    a = sbert_wk_pool(hidden, torch.ones(1, 5, dtype=torch.long), layer_start=1)
    b = sbert_wk_pool(padded, torch.tensor([[1] * 5 + [0] * 3]), layer_start=1)
    torch.testing.assert_close(a, b)


def test_too_few_states_is_an_error():
    with pytest.raises(ValueError, match="at least 3 hidden states"):
        sbert_wk_pool([torch.zeros(1, 2, 4)] * 2, torch.ones(1, 2))


def test_sbert_wk_mean_baseline_drops_the_final_sep_and_keeps_cls():
    """SBERT-WK's mean baseline (utils.py: ave_last_hidden): the first len - 1 real tokens of the last layer."""
    from defsentflow.encoders.pooling import pool

    torch.manual_seed(0)
    last = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
    out = pool(last, mask, "sbert_wk_mean")
    expected = [last[0, :4].mean(0), last[1, :2].mean(0), last[2, :1].mean(0)]  # a lone token stays
    torch.testing.assert_close(out, torch.stack(expected))
    assert not torch.allclose(out[0], pool(last, mask, "mean")[0])


def test_sts_rows_carry_pearson_beside_spearman_when_asked():
    """SBERT-WK's Table III reports Pearson: a figure of its own name (metric pearson), the Spearman rows unchanged."""
    from scipy.stats import pearsonr

    from defsentflow.evaluation.sts import score_tasks
    from defsentflow.evaluation.sts_data import StsSubset, StsTask

    rng = np.random.default_rng(0)
    subsets = tuple(StsSubset(name, tuple(f"{name} a{i}" for i in range(6)), tuple(f"{name} b{i}" for i in range(6)),
                              rng.uniform(0, 5, 6), source=name) for name in ("x", "y"))
    task = StsTask("sts12", subsets)
    vecs = {}

    def embed(texts):
        return np.stack([vecs.setdefault(t, rng.normal(size=8)) for t in texts])

    plain = score_tasks([task], embed)
    rows = score_tasks([task], embed, with_pearson=True)
    assert rows[:len(plain)] == plain and [(r["setting"], r["metric"]) for r in rows[len(plain):]] == [
        ("all", "pearson"), ("mean", "pearson")]
    a = np.stack([vecs[t] for s in subsets for t in s.sentences1])
    b = np.stack([vecs[t] for s in subsets for t in s.sentences2])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    gold = np.concatenate([s.scores for s in subsets])
    assert rows[len(plain)]["value"] == pytest.approx(100 * pearsonr(cos, gold)[0], abs=1e-6)
