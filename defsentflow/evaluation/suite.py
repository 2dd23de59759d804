"""The evaluation suite: STS tasks and the reverse dictionary for one model, recorded in the catalog.

This is what ``defsentflow eval`` and the ``evaluate`` flow run, for an
:class:`~defsentflow.evaluation.config.EvalConfig`. STS tasks share one encoding
pass (:func:`~defsentflow.evaluation.sts.evaluate_sts`); ``revdict`` calls
:func:`defsentflow.evaluation.revdict.evaluate_revdict` and needs a dictionary dataset.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from defsentflow.encoders import validate_pooling
from defsentflow.encoders.finite import NonFiniteError
from defsentflow.encoders.loading import resolve_model_path
from defsentflow.encoders.lookup import UnknownModelError, find_model
from defsentflow.encoders.model_record import record_of
from defsentflow.evaluation.config import (
    DICTIONARY_TASKS,
    EVAL_TASKS,
    EvalConfig,
    EvaluateSection,
    default_data_dir,
    validate_eval_tasks,
)
from defsentflow.evaluation.revdict import REVDICT_PROTOCOLS
from defsentflow.evaluation.sts import average_row, evaluate_sts
from defsentflow.evaluation.sts_data import task_files
from defsentflow.evaluation.wordpred import WORDPRED_PROTOCOLS, evaluate_wordpred
from defsentflow.storage import combine_hashes, hash_file

__all__ = ["EVAL_TASKS", "EvalConfig", "EvalResult", "EvaluateSection", "default_data_dir", "default_pooling",
           "evaluation_inputs_hash", "known_model", "record_evaluation", "resolve_model", "run_evaluation", "validate_eval_tasks"]


@dataclass(frozen=True)
class EvalResult:
    """Metric rows (``task, setting, metric, value, n, pooling``) and what produced them."""

    model: str
    pooling: str
    rows: tuple[dict[str, Any], ...]
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def average(self) -> dict[str, Any] | None:
        return average_row(self.rows)


def default_pooling(model: str | os.PathLike) -> str:
    """The pooling a model was trained with (its ``defsentflow.json``), else ``mean``."""
    try:
        return record_of(resolve_model_path(model)).pooling or "mean"
    except ValueError:  # an unreadable record: the default, as for a bare checkpoint
        return "mean"


def run_evaluation(model: str | os.PathLike, config: EvalConfig) -> EvalResult:
    """Evaluate ``model`` on ``config.tasks``; nothing is written (see :func:`record_evaluation`)."""
    pooling = validate_pooling(config.pooling or default_pooling(model))
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    sts = [t for t in config.tasks if t not in DICTIONARY_TASKS]
    if sts:
        t0 = time.perf_counter()
        rows += evaluate_sts(str(model), sts, data_dir=config.resolved_data_dir(), pooling=pooling, batch_size=config.batch_size,
                             autocast=config.autocast, max_length=config.max_length, sick_split=config.sick_split,
                             per_subset=config.per_subset, cache=config.cache, device=config.device)
        seconds["sts"] = time.perf_counter() - t0
    runs = [(split, protocol) for split in config.revdict_splits for protocol in config.revdict_protocols]

    revdict_runs = [r for r in runs if r[1] in REVDICT_PROTOCOLS]   # all-definitions is word prediction's
    if "revdict" in config.tasks and revdict_runs:
        from defsentflow.evaluation.revdict import (
            evaluate_revdict_runs,  # lazy: looked up at call time, so tests can replace it on its own module
        )

        t0 = time.perf_counter()
        for res in evaluate_revdict_runs(str(model), config.dictionary, runs=revdict_runs, pooling=pooling,
                                         candidates=config.revdict_candidates, modes=config.revdict_modes,
                                         max_queries=config.revdict_max_queries, batch_size=config.batch_size,
                                         autocast=config.autocast, device=config.device, cache=config.cache):
            rows += res["rows"]
        seconds["revdict"] = time.perf_counter() - t0
    if "wordpred" in config.tasks:
        t0 = time.perf_counter()
        for split, protocol in [r for r in runs if r[1] in WORDPRED_PROTOCOLS]:
            res = evaluate_wordpred(str(model), config.dictionary, split=split, protocol=protocol,
                                    max_queries=config.revdict_max_queries, batch_size=config.batch_size,
                                    autocast=config.autocast, device=config.device)
            rows += res["rows"]
        seconds["wordpred"] = time.perf_counter() - t0
    return EvalResult(str(model), pooling, tuple(rows), seconds)


def evaluation_inputs_hash(config: EvalConfig) -> str:
    """Content hash of every evaluation file the config's STS tasks read, plus the revdict dictionary name.

    A missing file is hashed as missing, so adding a held-back split later changes the hash.
    """
    parts = []
    for task in config.tasks:
        if task in DICTIONARY_TASKS:
            parts.append(f"{task}:{config.dictionary}:{','.join(config.revdict_splits)}:"
                         f"{','.join(config.revdict_protocols)}:{config.revdict_candidates}")
            continue
        for f in task_files(config.resolved_data_dir(), task, sick_split=config.sick_split):
            parts.append(f"{task}:{f.name}:{hash_file(f) if f.is_file() else 'missing'}")
    return combine_hashes(parts)


def resolve_model(catalog: Any, model: str) -> tuple[str, str]:
    """``(model_id, path)``: :func:`known_model`, else the name as given (no error)."""
    try:
        return known_model(catalog, model)
    except UnknownModelError:
        return model, resolve_model_path(model)


def known_model(catalog: Any, model: str) -> tuple[str, str]:
    """``(model_id, path)`` by the one model lookup (:func:`defsentflow.encoders.lookup.find_model`).

    Raises:
        ValueError: ``unknown model 'x'``, with the newest catalog ids.
    """
    ref = find_model(model, root=catalog.root)
    return ref.model_id, ref.path


def record_evaluation(catalog: Any, model_id: str, result: EvalResult, *, run_id: str | None = None) -> int:
    """Write the result's metric rows (replacing older values of the same keys); returns the count."""
    rows = [{k: r.get(k) for k in ("task", "setting", "metric", "value", "n", "n_excluded", "pooling")}
            for r in result.rows]
    bad = [r for r in rows if isinstance(r["value"], (int, float)) and not math.isfinite(r["value"])]
    if bad:
        raise NonFiniteError(f"model {model_id}: finite-value check failed: {len(bad)} of {len(rows)} scores are NaN "
                             f"or infinite (first: {bad[0]['task']} {bad[0]['metric']}); nothing recorded")
    catalog.record_metrics(model_id, rows, run_id=run_id)
    if Path(result.model).exists():
        # An id scores are filed under names a directory: the leaderboard then merges it with the
        # other ids of that directory (a baseline's base:<name> with PST's base-<hash>).
        catalog.execute("INSERT INTO models (model_id, path) VALUES (?, ?) ON CONFLICT (model_id) DO NOTHING",
                        [model_id, catalog.rel(result.model)])
    return len(rows)
