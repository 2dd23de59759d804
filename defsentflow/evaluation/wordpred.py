"""Word prediction (DefSent's own evaluation, its Table 2): a definition predicts its word.

Each query definition is pooled as the model was trained (pooling, then the pooler when it was
trained with one) and scored by the frozen prediction head:

* a word-prediction layer (``mlm_head``: the base model's MLM head; ``input_embeddings``: its
  frozen input word embeddings as decoder when it has none) over the whole vocabulary, for
  entries that are a single vocabulary token (the only words such a head can predict);
* DefSent+'s trained entry matrix (``entry_matrix``) over its rows, for entries that have a row.

A model trained here names its head in ``defsentflow.json`` (``decoder``, ``base_model``,
``entry_matrix``); any other model is scored through its own word-prediction layer. The query
vector is pooled with the evaluation's pooling (default: the training pooling, else mean) and
encoded with its max length. Queries follow a protocol of :mod:`defsentflow.evaluation.protocols`,
the reverse dictionary's too: ``unseen`` (no definition whose text the model trained on, at most
``max_queries``), ``multi-definition`` or ``all-definitions`` (every definition of the split:
DefSent's Table 2 protocol); those whose word the head cannot predict are dropped and counted
(``n_untargeted``). Figures are DefSent's, as its reference ``get_mrr`` and top-k count
(def2word.py): ``mrr@10`` (1/rank within the top 10, else 0, over every query) and top-1/3/10
accuracy; ``mrr`` is the full-ranking MRR (never lower); ``n_tied``: queries whose word tied with
another candidate. Ties are ranked pessimistically by default (:mod:`defsentflow.evaluation.ranks`:
the reference takes ``torch.topk``'s order, which puts an all-equal row's word outside the top 10).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from defsentflow.dictionary import tables
from defsentflow.encoders import validate_pooling
from defsentflow.encoders.loading import pick_device, resolve_model_path
from defsentflow.eval_tasks import CANONICAL, TASKS, FigureSettings, TieRule, dictionary_task
from defsentflow.evaluation.protocols import select_queries, trained_texts
from defsentflow.evaluation.ranks import chance_mrr, gold_ranks, rank_metrics, validate_ties
from defsentflow.evaluation.revdict import Protocol
from defsentflow.model import Head, model_head, record_of
from defsentflow.model.entry_matrix import EntryMatrix
from defsentflow.model.query import sentence_head_vectors
from defsentflow.model.targets import single_token_targets

__all__ = ["WORDPRED_PROTOCOLS", "evaluate_wordpred", "wordpred_task"]

WORDPRED_PROTOCOLS: tuple[str, ...] = TASKS["wordpred"].protocols


def wordpred_task(split: str, protocol: str = "unseen", settings: FigureSettings = CANONICAL) -> str:
    """``wordpred`` (test, unseen), ``wordpred-dev`` (selection), ``wordpred-alldefs`` (every
    definition: DefSent's Table 2 protocol), with the variant tokens of non-canonical settings."""
    return dictionary_task("wordpred", split, protocol, settings)


def _queries(table: pa.Table, split: str, protocol: str, targets_of: dict[str, int], exclude: set[str] | None,
             max_queries: int | None) -> tuple[list[str], np.ndarray, int, int]:
    """The protocol's queries of ``split`` whose word has a target, their targets, how many were
    excluded as seen in training and how many had no target."""
    entry = table.column("entry").to_pylist()
    definition = table.column("definition").to_pylist()
    chosen = select_queries(entry, definition, table.column("split").to_pylist(), split=split, protocol=protocol,
                            exclude=exclude, max_queries=max_queries)
    with_target = [i for i in chosen.rows if entry[i] in targets_of]
    texts = [definition[i] for i in with_target]
    return (texts, np.array([targets_of[entry[i]] for i in with_target], dtype=np.int64), chosen.n_excluded,
            len(chosen.rows) - len(with_target))


def _word_head(source: str, device: Any) -> tuple[Any, dict[str, int], str]:
    """The frozen word-prediction layer of ``source``, the single-token entry -> id map's tokenizer
    and the decoder's kind."""
    from defsentflow.model.adapters import (
        prepare_backbone,  # lazy: looked up at call time, so tests can replace it on its own module
    )

    prepared = prepare_backbone(source, device=device, word_head=True, use_pooler=False)
    return prepared.word_head, prepared.encoder.tokenizer, str(prepared.decoder)


def read_entry_matrix(model: str | os.PathLike, head: Head) -> tuple[np.ndarray, list[str]]:
    """The DefSent+ entry matrix a model was trained against (``[n_entries, H]`` float32) and its
    entries' names, through the one entry-matrix reader (:meth:`EntryMatrix.load`)."""
    try:
        em = EntryMatrix.load(str(head.entry_matrix or ""))
    except FileNotFoundError as exc:
        raise ValueError(f"{model}: the model's entry matrix is missing ({exc})") from None
    return np.asarray(em.matrix, dtype=np.float32), em.entries


def evaluate_wordpred(model: str | os.PathLike, dictionary: str | pa.Table, *, split: str = "test",
                      protocol: Protocol = "unseen", pooling: str | None = None, use_pooler: bool | None = None,
                      train_splits: list[str] | None = None, max_queries: int | None = CANONICAL.max_queries,
                      batch_size: int = 128, max_length: int = CANONICAL.max_length, autocast: str = "none",
                      device: str = "auto", ties: TieRule = "pessimistic",
                      root: str | os.PathLike | None = None) -> dict[str, Any]:
    """MRR and top-1/3/10 of predicting each query definition's word through the model's frozen head.

    Args:
        model: model directory, Hugging Face id or ``minilm``.
        dictionary: dataset name/key or a table with entry, definition and split columns.
        split: the split whose definitions are queries (``dev`` for selection).
        protocol: ``unseen`` (no query text the model trained on, at most ``max_queries``),
            ``multi-definition`` or ``all-definitions`` (no cap): :mod:`defsentflow.evaluation.protocols`.
        pooling, use_pooler: the sentence vector fed to the head (default: the model's training
            head, :func:`defsentflow.model.model_head`: its record, else mean pooling without the pooler).
        train_splits: the splits the model trained on (default: its record, else ``train``).
        max_length, autocast: how every query is encoded.
        ties: the rank of a word tied with other candidates (``pessimistic``, ``mid``, ``optimistic``).

    Returns:
        ``{"split", "protocol", "task", "ties", "head", "n_queries", "n_excluded", "n_untargeted",
        "n_candidates", "metrics": {"mrr", "mrr@10", "top1", "top3", "top10", "n_tied", "chance_mrr",
        "chance_mrr@10"}, "rows": [metric rows]}``.

    Raises:
        ValueError: no query has a target (e.g. a DefSent+ matrix of train-split entries and a
            split by entry, whose test entries have no row: use ``split_by: gloss``).
    """
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

    if protocol not in WORDPRED_PROTOCOLS:
        raise ValueError(f"word-prediction protocol must be one of {WORDPRED_PROTOCOLS}, got {protocol!r}")
    validate_ties(ties)
    folder = resolve_model_path(model)
    record = record_of(folder)
    head = model_head(folder, pooling=pooling, use_pooler=use_pooler, record=record)
    pooling, use_pooler = validate_pooling(head.pooling), head.use_pooler
    settings = FigureSettings(max_length=max_length, autocast=autocast, max_queries=max_queries, ties=ties)

    table = tables.load_dictionary_table(dictionary, root=root)
    train_splits = list(train_splits or record.trained_splits)
    exclude = trained_texts(table, train_splits) if protocol == "unseen" else None
    dev = pick_device(device)
    entries = sorted(set(table.column("entry").to_pylist()))
    score: Callable[[torch.Tensor], torch.Tensor]
    if head.decoder == "entry_matrix":
        matrix, names = read_entry_matrix(model, head)
        targets_of = {e: i for i, e in enumerate(names)}
        head_kind, n_candidates = "entry_matrix", len(names)
        normalize = head.normalize_logits
        weights = torch.from_numpy(matrix / np.linalg.norm(matrix, axis=1, keepdims=True).clip(min=1e-12)
                                   if normalize else matrix).to(dev)

        def score(h: torch.Tensor) -> torch.Tensor:
            if normalize:
                h = torch.nn.functional.normalize(h, dim=-1)
            return h @ weights.T
    else:
        source = str(head.base_model or folder) if head.decoder else str(model)
        head, tokenizer, head_kind = _word_head(source, dev)
        mask, ids = single_token_targets(tokenizer, entries)
        targets_of = {e: int(t) for e, m, t in zip(entries, mask, ids) if m}
        n_candidates = int(getattr(tokenizer, "vocab_size", 0) or len(tokenizer))

        def score(h: torch.Tensor) -> torch.Tensor:
            return head(h)

    texts, targets, n_excluded, n_untargeted = _queries(table, split, protocol, targets_of, exclude, max_queries)
    if not texts:
        raise ValueError(f"no word-prediction queries in split {split!r} under protocol {protocol!r}: "
                         f"{n_untargeted} definitions have no target in the {head_kind} head, {n_excluded} were "
                         f"seen in training")
    vecs = sentence_head_vectors(resolve_model_path(model), texts, pooling, use_pooler, batch_size=batch_size,
                                 max_length=max_length, autocast=autocast, device=device)
    ranks, tied = [], []
    with torch.inference_mode():
        for start in range(0, len(texts), 256):
            h = torch.from_numpy(np.ascontiguousarray(vecs[start:start + 256])).to(dev)
            r, t = gold_ranks(score(h).float().cpu().numpy(), targets[start:start + 256], ties)
            ranks.append(r)
            tied.append(t)
    metrics = rank_metrics(np.concatenate(ranks), np.concatenate(tied), ties)
    # what a uniformly random ranking of the head's candidates scores (H_N / N; MRR@10: H_10 / N)
    metrics.update({"chance_mrr": chance_mrr(n_candidates), "chance_mrr@10": chance_mrr(n_candidates, at=10)})
    task = wordpred_task(split, protocol, settings)
    result = {"split": split, "protocol": protocol, "task": task, "ties": ties, "head": head_kind, "pooling": pooling,
              "use_pooler": use_pooler, "n_queries": len(texts), "n_excluded": n_excluded,
              "n_untargeted": n_untargeted, "n_candidates": n_candidates, "train_splits": train_splits,
              "metrics": metrics}
    result["rows"] = [{"task": task, "setting": head_kind, "metric": k, "value": v, "n": len(texts),
                       "n_excluded": n_excluded, "pooling": pooling} for k, v in metrics.items()]
    return result
