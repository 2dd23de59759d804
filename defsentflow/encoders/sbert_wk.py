"""SBERT-WK pooling (Wang & Kuo, 2020): a training-free sentence vector from all layers.

For every token the hidden states of layers ``layer_start..L`` (``hidden_states[layer_start:]``,
where ``hidden_states[0]`` is the embedding output) are fused into one vector, and the sentence
vector is a weighted average of the fused tokens. This follows the authors' implementation
(BinWang28/SBERT-WK-Sentence-Embedding, ``utils.py``, method ``dissecting``) step by step:

1. *Unify each token across layers.* For layer ``k`` take the token's vectors at the layers of a
   context window (up to ``context_window`` layers on each side) and the vector at ``k`` itself,
   stacked as the columns of ``W = [neighbours..., h_k]``, and factor ``W = QR``. With ``r`` the
   last column of ``R``:

   * novelty ``= |r[-1]| / ||r||``: the share of ``h_k`` orthogonal to its neighbours;
   * alignment ``= 1 / (2 m' * (mean_j R[:-1, j] / ||R[:-1, j]||) . r[:-1] / ||r[:-1]||)``, with
     ``m'`` the window size (neighbours + 1): the inverse of how well ``h_k`` lines up with the
     mean direction of its neighbours.

   Both are normalised to sum 1 over the layers, added, normalised again, and weight the layers.
   As in the reference, the left window is Python-sliced (``layers[k - w:k]``), so for
   ``k < context_window`` it is empty rather than partial; we keep that to reproduce its numbers.
2. *Weight tokens by importance.* A token's weight is the variance over layers of the cosine
   between consecutive layers' vectors (``var(diag(cos_sim(H), -1))``), normalised to sum 1
   over the sentence's tokens. The tokens are those under the attention mask except the last
   (``[SEP]``/``</s>``); ``[CLS]`` is kept, as in the reference.

The reference loops over sentences, tokens and layers in NumPy; here each layer's window is one
batched ``torch.linalg.qr`` over all (sentence, token) pairs, on the device of the states (QR is
sign-ambiguous, but every quantity used is invariant to the signs of ``Q``'s columns).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["sbert_wk_mean_pool", "sbert_wk_pool", "window_layers"]

_EPS = 1e-12


def window_layers(n_layers: int, k: int, context_window: int) -> list[int]:
    """Layer indices in the window of layer ``k``: left (Python-sliced), right, then ``k``."""
    layers = list(range(n_layers))
    left = layers[k - context_window:k]  # a negative start gives an empty slice, as in the reference
    right = layers[k + 1:k + context_window + 1]
    return left + right + [k]


def _layer_weights(states: torch.Tensor, context_window: int) -> torch.Tensor:
    """Per-token layer weights ``[N, n]`` from token states ``[N, n, H]`` (n layers)."""
    n = states.shape[1]
    alignment, novelty = [], []
    for k in range(n):
        idx = window_layers(n, k, context_window)
        window = states[:, idx, :]  # [N, m, H], the token itself last
        _, r_mat = torch.linalg.qr(window.transpose(1, 2), mode="reduced")  # R: [N, m, m]
        r = r_mat[:, :, -1]
        neigh = r_mat[:, :-1, :-1]
        unit = neigh / neigh.norm(dim=1, keepdim=True).clamp_min(_EPS)  # each neighbour, unit length
        cos = (unit.mean(dim=2) * r[:, :-1]).sum(1) / r[:, :-1].norm(dim=1).clamp_min(_EPS)
        alignment.append(1.0 / (cos * window.shape[1] * 2))
        novelty.append(r[:, -1].abs() / r.norm(dim=1).clamp_min(_EPS))
    a = torch.stack(alignment, 1)
    v = torch.stack(novelty, 1)
    alpha = a / a.sum(1, keepdim=True) + v / v.sum(1, keepdim=True)
    return alpha / alpha.sum(1, keepdim=True)


def _token_importance(states: torch.Tensor) -> torch.Tensor:
    """Variance over layers of the consecutive-layer cosine similarities, ``[N]``."""
    unit = states / states.norm(dim=2, keepdim=True).clamp_min(_EPS)
    cos = (unit[:, 1:] * unit[:, :-1]).sum(2)  # [N, n - 1]
    return cos.var(dim=1, unbiased=False)


def _without_last_token(attention_mask: torch.Tensor) -> torch.Tensor:
    """The attention mask without each sequence's last real token (``[SEP]`` / ``</s>``), ``[CLS]`` kept;
    a lone token stays (the reference's ``np.sum(masks, axis=1) - 1``)."""
    real = attention_mask.to(torch.bool)
    mask = real.clone()
    last = real.shape[1] - 1 - real.flip(1).to(torch.int64).argmax(1)
    several = real.sum(1) > 1
    mask[torch.arange(real.shape[0], device=mask.device)[several], last[several]] = False
    return mask


def sbert_wk_mean_pool(last_hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """SBERT-WK's mean baseline (``utils.py: ave_last_hidden``): the last layer's states averaged over the
    tokens SBERT-WK fuses, ``[CLS]`` included and the final ``[SEP]`` left out (our ``mean`` keeps both)."""
    mask = _without_last_token(attention_mask).unsqueeze(-1).to(last_hidden.dtype)
    return (last_hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def sbert_wk_pool(hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor, *,
                  layer_start: int = 4, context_window: int = 2) -> torch.Tensor:
    """SBERT-WK sentence vectors ``[B, H]`` from all hidden states.

    Args:
        hidden_states: the model's ``hidden_states`` (embedding output, then each layer), each
            ``[B, T, H]``; sequences padded on the right.
        attention_mask: ``[B, T]``.
        layer_start: first hidden state fused (4 in the paper). A model too shallow to leave at
            least three states from there (the token weight is a variance over consecutive-layer
            cosines) uses its last three states instead.
        context_window: neighbouring layers on each side (2 in the paper).

    Example:
        >>> out = model(**batch, output_hidden_states=True)
        >>> vecs = sbert_wk_pool(out.hidden_states, batch["attention_mask"])
    """
    n_states = len(hidden_states)
    if n_states < 3:
        raise ValueError(f"sbert_wk pooling needs at least 3 hidden states, got {n_states}")
    start = min(layer_start, n_states - 3)
    dtype = hidden_states[-1].dtype
    b, t, h = hidden_states[-1].shape
    mask = _without_last_token(attention_mask)
    keep = mask.reshape(-1)
    sentence = torch.arange(b, device=mask.device).repeat_interleave(t)[keep]  # sentence of each kept token
    # float64: consecutive layers' cosines are close to 1 and the token weight is their variance,
    # which float32 resolves only to ~1e-3 relative (MPS has no float64: float32 there)
    work = torch.float32 if hidden_states[-1].device.type == "mps" else torch.float64
    # only real tokens, never the padding: [N, n, H]
    tokens = torch.stack([x.reshape(b * t, h)[keep].to(work) for x in hidden_states[start:]], dim=1)
    alpha = _layer_weights(tokens, context_window)
    fused = (alpha.unsqueeze(2) * tokens).sum(1)  # [N, H]
    importance = _token_importance(tokens)
    total = torch.zeros(b, device=tokens.device, dtype=work).index_add_(0, sentence, importance)
    weight = importance / total[sentence].clamp_min(_EPS)
    out = torch.zeros(b, h, device=tokens.device, dtype=work).index_add_(0, sentence, weight.unsqueeze(1) * fused)
    return out.to(dtype)
