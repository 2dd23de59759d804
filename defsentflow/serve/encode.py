"""Query vectors for a served index without padding: a batch's definitions packed into one sequence.

A micro-batch of definitions differs widely in length (OEWN test definitions: median 12 tokens,
95th percentile 29), so padding every one to the batch's longest roughly doubles the encoder's
work. Here the token ids of the batch are laid end to end (rows of at most ``max_tokens``), each
definition keeps its own position ids, and a block-diagonal attention mask keeps it from seeing
its neighbours; the pooled vectors are those of the padded encoder up to float rounding
(measured: 1e-7). Linear layers, most of the cost, then run on the real tokens only.

Used for ``cosine`` indexes pooled by ``mean`` or ``cls`` when a probe batch encoded both ways
agrees (a model whose embeddings do not take explicit position ids falls back to
:meth:`RevdictIndex.query_vectors`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from defsentflow.encoders import encode_texts, load_encoder
from defsentflow.encoders.encoding import inference_model

__all__ = ["PackedQueryEncoder"]

_PROBE = ["a small animal that lives in a house", "water", "the man who is ruler of a country, from the family "
          "that has ruled it for a long time", "music with words"]


class PackedQueryEncoder:
    """Encode the query side of a cosine-mode index with packed (unpadded) batches.

    Args:
        meta: the index's ``meta.json`` (model, pooling, max_length, normalize).
        device: where the encoder runs.
        max_tokens: most tokens per packed row (attention costs ``max_tokens**2`` per row).

    Use :meth:`for_index`, which returns None when packing does not reproduce the padded vectors.
    """

    def __init__(self, meta: dict[str, Any], *, device: str = "cpu", max_tokens: int = 256):
        self.meta, self.max_tokens = meta, max_tokens
        self.enc = load_encoder(meta["model"], device=device)

    @classmethod
    def for_index(cls, meta: dict[str, Any], *, device: str = "cpu",
                  tolerance: float = 1e-4) -> PackedQueryEncoder | None:
        """A packed encoder for this index, or None (another mode or pooling, or a model packing changes)."""
        if meta.get("mode") != "cosine" or meta.get("pooling") not in ("mean", "cls"):
            return None

        packed = cls(meta, device=device)
        padded = encode_texts(packed.enc, _PROBE, pooling=meta["pooling"], max_length=meta["max_length"])
        try:
            got = packed.encode(_PROBE, normalize=False)
        except (TypeError, ValueError, RuntimeError, IndexError):
            return None
        return packed if float(np.abs(got - padded).max()) <= tolerance * max(1.0, float(np.abs(padded).max())) \
            else None

    def _rows(self, lengths: Sequence[int]) -> list[list[int]]:
        """Consecutive texts per packed row, each row at most ``max_tokens`` long (a longer text alone)."""
        rows: list[list[int]] = [[]]
        used = 0
        for i, n in enumerate(lengths):
            if rows[-1] and used + n > self.max_tokens:
                rows.append([])
                used = 0
            rows[-1].append(i)
            used += n
        return rows

    def encode(self, texts: Sequence[str], *, normalize: bool | None = None) -> np.ndarray:
        """float32 ``[len(texts), hidden]``, L2-normalised when the index says so."""
        import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

        enc, m = self.enc, self.meta
        ids = enc.tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=m["max_length"],
                            return_attention_mask=False, return_token_type_ids=False)["input_ids"]
        out = np.zeros((len(ids), enc.hidden_size), dtype=np.float32)
        was_training = enc.model.training
        enc.model.eval()
        try:
            with torch.inference_mode():
                model = inference_model(enc.model, enc.device)
                for row in self._rows([len(x) for x in ids]):
                    out[row] = self._encode_row(model, [ids[i] for i in row]).numpy()
        finally:
            enc.model.train(was_training)
        if m["normalize"] if normalize is None else normalize:
            out /= np.linalg.norm(out, axis=1, keepdims=True).clip(min=1e-12)
        return out

    def _encode_row(self, model: Any, seqs: list[list[int]]) -> Any:
        import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

        dev = self.enc.device
        lengths = torch.tensor([len(s) for s in seqs])
        flat = torch.tensor([t for s in seqs for t in s], device=dev).unsqueeze(0)
        positions = torch.cat([torch.arange(n) for n in lengths.tolist()]).unsqueeze(0).to(dev)
        segment = torch.repeat_interleave(torch.arange(len(seqs)), lengths).to(dev)
        mask = (segment[:, None] == segment[None, :])[None, None]  # [1, 1, T, T], True: may attend
        kwargs: dict[str, Any] = {"input_ids": flat, "attention_mask": mask, "position_ids": positions}
        if getattr(getattr(self.enc.model, "embeddings", None), "token_type_embeddings", None) is not None:
            kwargs["token_type_ids"] = torch.zeros_like(flat)
        hidden = model(**kwargs, return_dict=True).last_hidden_state[0].float()
        if self.meta["pooling"] == "cls":
            starts = torch.cumsum(lengths, 0) - lengths
            return hidden[starts.to(dev)].cpu()
        sums = torch.zeros(len(seqs), hidden.shape[1], device=dev).index_add_(0, segment, hidden)
        return (sums / lengths.to(dev, torch.float32)[:, None]).cpu()
