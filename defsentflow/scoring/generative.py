"""Generative context terms from any Hugging Face causal LM.

With ``a = c_<``, ``b = s``, ``c = c_>`` (each tokenized on its own with a leading space, so a
part has the same tokens in every sequence) and ``J(x) = log p_LM(x | BOS)``, the three terms are
exact ratios of the LM's joint probabilities of the concatenations::

    log p(s   | c_<, c_>) = J(a b c) - J(a c)        (normalised by |s|   in tokens)
    log p(c_< | s, c_>)   = J(a b c) - J(b c)        (normalised by |c_<| in tokens)
    log p(c_> | c_<, s)   = J(a b c) - J(a b)        (normalised by |c_>| in tokens)

A term whose part is empty (a slot at a document's edge) is 0. ``J(a c)`` depends on the context
only and is computed once per distinct context in a call. Parts longer than ``max_part_tokens``
are cut (the start of ``c_<`` is dropped, the end of ``s`` and ``c_>``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch

from defsentflow.encoders import model_construction, model_content_hash, require_safetensors
from defsentflow.scoring.contexts import Context

__all__ = ["GenerativeScorer"]


class GenerativeScorer:
    """Length-normalised conditional log-probabilities of each part given the other two.

    Example:
        >>> gen = GenerativeScorer("gpt2")
        >>> gen.terms(["Prices rose."], [Context(("Markets opened.",), ("Traders cheered.",))])  # [1, 3]
    """

    def __init__(self, model: str | os.PathLike, *, batch_size: int = 16, max_part_tokens: int = 96,
                 device: str | torch.device = "cpu"):
        from transformers import (  # lazy: transformers takes seconds to load; only code that loads a model needs it
            AutoModelForCausalLM,
            AutoTokenizer,
        )

        path = require_safetensors(model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        with model_construction():
            self.model = AutoModelForCausalLM.from_pretrained(path, use_safetensors=True)
        self.model = self.model.to(device).eval()
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.max_part_tokens = max_part_tokens
        self.version = f"gen:{model_content_hash(path)}:{max_part_tokens}"
        tok = self.tokenizer
        self.bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else (self.bos if self.bos is not None else 0)

    def _ids(self, text: str) -> tuple[int, ...]:
        if not text:
            return ()
        return tuple(self.tokenizer(" " + text, add_special_tokens=False)["input_ids"])

    @torch.inference_mode()
    def joint_logprob(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """``J(x)``: sum of the LM's log-probabilities of every token of each sequence after BOS.

        Without a BOS/EOS token in the vocabulary, the first token is not scored.
        """
        seqs = [([self.bos] if self.bos is not None else []) + list(s) for s in sequences]
        out = np.zeros(len(seqs), dtype=np.float64)
        order = np.argsort([-len(s) for s in seqs], kind="stable")
        for a in range(0, len(order), self.batch_size):
            idx = order[a:a + self.batch_size]
            width = max(len(seqs[i]) for i in idx)
            if width < 2:
                continue
            ids = torch.full((len(idx), width), self.pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for row, i in enumerate(idx):
                ids[row, :len(seqs[i])] = torch.tensor(seqs[i])
                mask[row, :len(seqs[i])] = 1
            logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1)
            target = ids[:, 1:].to(self.device)
            tok = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1) * mask[:, 1:].to(self.device)
            out[idx] = tok.sum(-1).double().cpu().numpy()
        return out

    def terms(self, sentences: Sequence[str], contexts: Sequence[Context]) -> np.ndarray:
        """``[n, 3]`` array: the three normalised terms for ``sentences[j]`` in ``contexts[j]``."""
        if len(sentences) != len(contexts):
            raise ValueError(f"{len(sentences)} sentences but {len(contexts)} contexts")
        m = self.max_part_tokens
        a = [self._ids(" ".join(c.before))[-m:] for c in contexts]
        b = [self._ids(s)[:m] for s in sentences]
        c = [self._ids(" ".join(x.after))[:m] for x in contexts]
        ctx = list(dict.fromkeys(zip(a, c)))
        j_ac = dict(zip(ctx, self.joint_logprob([x + y for x, y in ctx])))
        n = len(sentences)
        j = self.joint_logprob([a[i] + b[i] + c[i] for i in range(n)]
                               + [b[i] + c[i] for i in range(n)] + [a[i] + b[i] for i in range(n)])
        j_abc, j_bc, j_ab = j[:n], j[n:2 * n], j[2 * n:]
        out = np.zeros((n, 3), dtype=np.float64)
        for i in range(n):
            if b[i]:
                out[i, 0] = (j_abc[i] - j_ac[(a[i], c[i])]) / len(b[i])
            if a[i]:
                out[i, 1] = (j_abc[i] - j_bc[i]) / len(a[i])
            if c[i]:
                out[i, 2] = (j_abc[i] - j_ab[i]) / len(c[i])
        return out.astype(np.float32)

    def score(self, sentences: Sequence[str], contexts: Sequence[Context]) -> np.ndarray:
        """The unweighted sum of the three terms (a :class:`ContextScorer` on its own)."""
        return self.terms(sentences, contexts).sum(axis=1)
