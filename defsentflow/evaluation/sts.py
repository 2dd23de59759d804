"""Unsupervised STS evaluation: Spearman x 100 between cosine similarity and gold scores.

Two settings are reported for the SemEval years, following SimCSE's evaluation:

* ``all``: the pairs of every subset of a year are concatenated and one Spearman is taken
  (SimCSE's and MTEB's headline figure);
* ``mean``: the Spearman of each subset, averaged (SentEval's ``mean``).

STS-B and SICK-R are a single set, reported as ``all``. Every sentence of every requested task
is encoded in one :func:`~defsentflow.encoders.encode_texts` call, so duplicates across tasks are
encoded once and batches are length-sorted over the whole pool.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from defsentflow.encoders import LoadedEncoder, encode_texts, load_encoder, validate_pooling
from defsentflow.encoders.finite import require_finite
from defsentflow.eval_tasks import AVERAGE_TASK, AVERAGE_TASKS, VARIANT_SEP, FigureSettings, with_variant
from defsentflow.evaluation.metrics import paired_cosine, pearson, spearman
from defsentflow.evaluation.sts_data import SickSplit, StsTask, load_task, validate_tasks

__all__ = ["SEVEN_TASKS", "average_row", "evaluate_sts", "score_tasks", "spearman_rows"]

# The 7-task STS average of SimCSE/DefSent tables (defsentflow/eval_tasks.py).
SEVEN_TASKS: tuple[str, ...] = AVERAGE_TASKS


def spearman_rows(task: StsTask, sims: Sequence[np.ndarray], *, pooling: str | None = None,
                  per_subset: bool = False, variant: Sequence[str] = (), with_pearson: bool = False) -> list[dict[str, Any]]:
    """Metric rows for one task given the cosine similarities of each subset's pairs; ``variant``:
    the tokens of its non-canonical settings (:class:`~defsentflow.eval_tasks.FigureSettings`);
    ``with_pearson``: Pearson x 100 rows beside (metric ``pearson``, the figure SBERT-WK's Table III reports)."""
    gold = [s.scores for s in task.subsets]
    name = with_variant(task.name, variant)
    rows = [{"task": name, "setting": "all", "metric": "spearman",
             "value": 100.0 * spearman(np.concatenate(sims), np.concatenate(gold)), "n": task.n,
             "pooling": pooling, "source": ", ".join(task.sources)}]
    per = [100.0 * spearman(s, g) for s, g in zip(sims, gold)]
    if len(task.subsets) > 1:
        rows.append({"task": name, "setting": "mean", "metric": "spearman", "value": float(np.mean(per)),
                     "n": task.n, "pooling": pooling, "source": rows[0]["source"]})
        if per_subset:
            rows += [{"task": f"{name}/{s.name}", "setting": "all", "metric": "spearman", "value": v,
                      "n": len(s), "pooling": pooling, "source": s.source} for s, v in zip(task.subsets, per)]
    if with_pearson:
        rows.append({**rows[0], "metric": "pearson", "value": 100.0 * pearson(np.concatenate(sims), np.concatenate(gold))})
        if len(task.subsets) > 1:
            rows.append({**rows[1], "metric": "pearson",
                         "value": float(np.mean([100.0 * pearson(s, g) for s, g in zip(sims, gold)]))})
    return rows


def score_tasks(tasks: Sequence[StsTask], embed: Callable[[list[str]], np.ndarray], *,
                pooling: str | None = None, per_subset: bool = False, variant: Sequence[str] = (),
                with_pearson: bool = False) -> list[dict[str, Any]]:
    """Embed every sentence of ``tasks`` with ONE call of ``embed`` and score each task."""
    texts: list[str] = []
    spans = []
    for t in tasks:
        for s in t.subsets:
            start = len(texts)
            texts += s.sentences1
            texts += s.sentences2
            spans.append((start, len(s)))
    vecs = embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
    if len(vecs) != len(texts):
        raise ValueError(f"embed returned {len(vecs)} vectors for {len(texts)} texts")
    rows: list[dict[str, Any]] = []
    k = 0
    for t in tasks:
        sims = []
        for _ in t.subsets:
            start, n = spans[k]
            k += 1
            sims.append(paired_cosine(vecs[start:start + n], vecs[start + n:start + 2 * n]))
        rows += spearman_rows(t, sims, pooling=pooling, per_subset=per_subset, variant=variant, with_pearson=with_pearson)
    return rows


def average_row(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The 7-task average of the ``all`` Spearman rows, or the average over those present, labelled.

    Returns a row with ``task`` the average's (``sts7``, with the rows' variant tokens), ``n`` the
    number of tasks averaged and ``label`` saying which (``"avg (7 tasks)"`` or ``"avg of 5/7:
    sts12,sts13,..."``); None when none is present.
    """
    values, variant = {}, ()
    for r in rows:
        base, *tokens = r["task"].split(VARIANT_SEP)
        if r["setting"] == "all" and r["metric"] == "spearman" and base in SEVEN_TASKS:
            values[base], variant = r["value"], tuple(tokens)
    present = [t for t in SEVEN_TASKS if t in values]
    if not present:
        return None
    label = "avg (7 tasks)" if len(present) == len(SEVEN_TASKS) else \
        f"avg of {len(present)}/{len(SEVEN_TASKS)}: {','.join(present)}"
    pooling = next((r.get("pooling") for r in rows), None)
    return {"task": with_variant(AVERAGE_TASK, variant), "setting": "all", "metric": "spearman",
            "value": float(np.mean([values[t] for t in present])), "n": len(present), "pooling": pooling,
            "label": label + (f" ({', '.join(variant)})" if variant else "")}


def evaluate_sts(encoder: Any, tasks: Sequence[str] | str, *, data_dir: str | os.PathLike, pooling: str = "mean",
                 batch_size: int = 128, autocast: str = "none", max_length: int = 256,
                 sick_split: SickSplit = "auto", per_subset: bool = False, cache: bool | str | os.PathLike = False,
                 device: str = "auto", pearson: bool = False) -> list[dict[str, Any]]:
    """Evaluate an encoder on STS tasks.

    Args:
        encoder: a :class:`~defsentflow.encoders.LoadedEncoder` or anything ``load_encoder`` takes.
        tasks: names from :data:`~defsentflow.evaluation.sts_data.TASKS` (list or comma string).
        data_dir: the directory holding ``sts/`` and ``sick/``.
        pooling: ``cls``, ``mean``, ``max``, ``prompt`` or ``sbert_wk``.
        max_length: tokens per sentence (256, all-MiniLM-L6-v2's sentence-transformers setting;
            the longest STS12-16 / STS-B dev sentence has 93 WordPiece tokens, so any value from
            128 up gives the same scores). Another value, or an autocast, is named in the rows'
            task (``sts12+len64``): a figure's name carries every setting that changes it.
        sick_split: which SICK file ``sickr`` reads (``auto``: test if present, else trial; the
            row is then named ``sickr-trial``).
        per_subset: also return one row per subset (``task="sts12/MSRpar"``).
        pearson: also return Pearson x 100 rows (metric ``pearson``) beside the Spearman ones.

    Returns:
        Metric rows ``{"task", "setting", "metric", "value", "n", "pooling", "source"}``; the
        value is Spearman x 100.

    Example:
        >>> rows = evaluate_sts("minilm", ["sts12", "stsb-dev"], data_dir="../shared/data")
    """
    validate_pooling(pooling)
    names = validate_tasks(tasks)
    loaded = [load_task(data_dir, name, sick_split=sick_split) for name in names]
    enc = encoder if isinstance(encoder, LoadedEncoder) else load_encoder(encoder, device=device)

    def embed(texts: list[str]) -> np.ndarray:
        vecs = encode_texts(enc, texts, pooling=pooling, batch_size=batch_size, max_length=max_length,
                            autocast=autocast, cache=cache, desc="sts")
        require_finite(vecs, model=str(encoder if not isinstance(encoder, LoadedEncoder) else enc.path),
                       what="sentence vectors")
        return vecs

    variant = FigureSettings(max_length=max_length, autocast=autocast).tokens("sts")
    return score_tasks(loaded, embed, pooling=pooling, per_subset=per_subset, variant=variant, with_pearson=pearson)
