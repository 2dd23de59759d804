"""The trained sentence vector and the frozen prediction heads on top of it.

Both methods score a definition's sentence vector ``h`` against a frozen head and minimise the
cross-entropy with the defined word: DefSent's head is the pretrained word-prediction layer
(targets are vocabulary ids), DefSent+'s the entry matrix (targets are entry rows,
``logits = h . entry(e')``, no bias). :func:`~defsentflow.model.query.head_vector` is the one definition of ``h`` used for
training and for the reverse dictionary's head mode.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from defsentflow.encoders.pooling import pool
from defsentflow.model.query import head_vector

__all__ = ["DefinitionClassifier", "FUSED_MIN_ENTRIES", "prepare_matrix"]

# From this many entries on, DefSent+'s full softmax runs as one fused function (:class:`_MatrixCrossEntropy`)
# instead of autograd's chain; below it, the chain, so every figure measured on smaller heads is reproduced
# bit for bit (the two agree to float rounding, tests/training/test_heads.py).
FUSED_MIN_ENTRIES = 65_536
_ROWS = 4  # rows of the [B, N] logits exponentiated at a time (a [4, N] temporary)


def prepare_matrix(matrix: np.ndarray | torch.Tensor, *, normalize: bool, dtype: torch.dtype = torch.float32,
                   device: torch.device | str = "cpu", chunk: int = 65_536) -> torch.Tensor:
    """The entry matrix as the head scores it: rows unit-normalised if ``normalize``, in ``dtype``,
    on ``device``; built chunk by chunk into one new tensor, so a memory-mapped ``.npy`` source
    is never copied whole and the result is the only copy in (anonymous) memory."""
    n, hidden = matrix.shape
    out = torch.empty((n, hidden), dtype=dtype, device=device)
    for start in range(0, n, chunk):
        block = matrix[start:start + chunk]
        block = torch.from_numpy(np.array(block, dtype=np.float32)) if isinstance(block, np.ndarray) else block.detach()
        block = block.to(device=device, dtype=torch.float32)
        out[start:start + chunk] = (F.normalize(block, dim=-1) if normalize else block).to(dtype)
    return out


class _MatrixCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of ``(h @ m^T) / temperature`` against ``labels``, ``m`` frozen, in one
    ``[B, N]`` buffer: the logits, scaled in place, turned into the softmax's gradient in place in
    the backward pass. Autograd's chain (product, division, log-softmax, NLL) allocates and fills
    four such buffers, which at a million entries costs as much as a third matrix product."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, m: torch.Tensor, labels: torch.Tensor, temperature: float) -> torch.Tensor:
        z = (h.to(m.dtype) @ m.T).float()
        if temperature != 1.0:
            z.div_(temperature)
        lse = torch.cat([torch.logsumexp(z[i:i + _ROWS], dim=1) for i in range(0, len(z), _ROWS)])
        loss = (lse - z.gather(1, labels[:, None]).squeeze(1)).mean()
        ctx.save_for_backward(m, z, lse, labels)
        ctx.temperature, ctx.h_dtype = temperature, h.dtype
        return loss

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        m, z, lse, labels = ctx.saved_tensors
        for i in range(0, len(z), _ROWS):  # z becomes softmax(z) in place (the backward runs once)
            z[i:i + _ROWS].sub_(lse[i:i + _ROWS, None]).exp_()
        z[torch.arange(len(z), device=z.device), labels] -= 1.0
        scale = grad / (len(z) * ctx.temperature)
        grad_h = (z.to(m.dtype) @ m).float() * scale
        return grad_h.to(ctx.h_dtype), None, None, None


class DefinitionClassifier(nn.Module):
    """Backbone + pooling (+ pooler) + a frozen head: logits over words or entries.

    Exactly one of ``word_head`` (a frozen module ``[B, H] -> [B, V]``) and ``matrix`` (a frozen
    ``[N, H]`` array scored as ``h . matrix^T``) is given. ``normalize`` turns the matrix scores
    into cosines; logits are divided by ``temperature``. The matrix is prepared once
    (:func:`prepare_matrix`: normalised, in ``matrix_dtype``, the compute dtype of the step, so
    autocast has nothing to cast) and held as the one copy; a tensor already prepared is kept as is.

    ``sampled`` (DefSent+ only) replaces the full softmax by one over the batch's targets and
    ``sampled`` entries drawn uniformly without replacement each step (``generator``); the other
    entries' logits get ``log(N / sampled)`` added, the inverse of their inclusion probability.
    When ``sampled >= N`` every entry is a candidate and the loss is the full one.
    """

    def __init__(self, backbone: nn.Module, *, pooling: str, pooler_dense: nn.Linear | None, activation: str,
                 word_head: nn.Module | None = None, matrix: torch.Tensor | np.ndarray | None = None,
                 temperature: float = 1.0, normalize: bool = False, matrix_dtype: torch.dtype = torch.float32,
                 sampled: int | None = None, generator: torch.Generator | None = None):
        super().__init__()
        if (word_head is None) == (matrix is None):
            raise ValueError("give exactly one of word_head and matrix")
        if normalize and matrix is None:
            raise ValueError("normalize_logits needs a matrix head (DefSent+ or the input-embedding decoder)")
        if sampled is not None and matrix is None:
            raise ValueError("sampled negatives need a matrix head (DefSent+)")
        self.backbone = backbone
        self.pooling = pooling
        self.pooler_dense = pooler_dense
        self.activation = activation
        self.word_head = word_head
        self.temperature = float(temperature)
        self.normalize = normalize
        self.sampled = sampled
        self.generator = generator
        self.fused_min_entries = FUSED_MIN_ENTRIES
        if matrix is not None:
            device = next(backbone.parameters()).device
            prepared = prepare_matrix(matrix, normalize=normalize, dtype=matrix_dtype, device=device)
            self.register_buffer("matrix", prepared, persistent=False)
        else:
            self.matrix = None

    def sentence_vectors(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        out = self.backbone(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], return_dict=True)
        pooled = pool(out.last_hidden_state, batch["attention_mask"], self.pooling)
        return head_vector(pooled, self.pooler_dense, self.activation)

    def _scores(self, h: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        if self.normalize:
            h = F.normalize(h, dim=-1)
        m = self.matrix if rows is None else self.matrix.index_select(0, rows)
        return h.to(m.dtype) @ m.T

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        h = self.sentence_vectors(batch)
        logits = self.word_head(h) if self.word_head is not None else self._scores(h)
        return logits.float() / self.temperature

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.sampled is not None:
            return self.sampled_loss(batch)
        if self.matrix is not None and self.matrix.shape[0] >= self.fused_min_entries:
            h = self.sentence_vectors(batch)
            h = F.normalize(h, dim=-1) if self.normalize else h
            return _MatrixCrossEntropy.apply(h, self.matrix, batch["labels"], self.temperature)
        return F.cross_entropy(self(batch), batch["labels"])

    def sampled_loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Cross-entropy over the batch's targets and ``self.sampled`` uniformly drawn entries."""
        n, labels = self.matrix.shape[0], batch["labels"]
        k = min(int(self.sampled), n)
        drawn = torch.randperm(n, generator=self.generator)[:k].to(labels.device) if k < n else None
        rows = torch.arange(n, device=labels.device) if drawn is None else torch.unique(torch.cat([labels, drawn]))
        target = torch.searchsorted(rows, labels)  # rows is sorted: the label's column
        logits = self._scores(self.sentence_vectors(batch), rows).float() / self.temperature
        if drawn is not None:
            is_target = torch.zeros(len(rows), dtype=torch.bool, device=rows.device)
            is_target[target] = True
            logits = logits + torch.where(is_target, 0.0, float(np.log(n / k)))
        return F.cross_entropy(logits, target)
