"""The evaluation suite: the requested tasks for one model, and their rows filed in the catalog.

The figures come from the one figure path (:mod:`defsentflow.evaluation.figures`: each task's
kind, :mod:`defsentflow.evaluation.kinds`); :func:`record_evaluation` files the rows under a model
id and run; :func:`known_model` is the model lookup as the evaluation names a model.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from defsentflow.encoders.finite import NonFiniteError
from defsentflow.encoders.loading import portable_model_name
from defsentflow.evaluation.config import (
    EVAL_TASKS,
    EvalConfig,
    EvaluateSection,
    default_data_dir,
    validate_eval_tasks,
)
from defsentflow.evaluation.figures import default_pooling, evaluate_figures
from defsentflow.evaluation.sts import average_row
from defsentflow.model.lookup import find_model

__all__ = ["EVAL_TASKS", "EvalConfig", "EvalResult", "EvaluateSection", "default_data_dir", "default_pooling",
           "known_model", "record_evaluation", "run_evaluation", "validate_eval_tasks"]

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


def run_evaluation(model: str | os.PathLike, config: EvalConfig) -> EvalResult:
    """Evaluate ``model`` on ``config.tasks``, every task with the evaluation's pooling and max length,
    by the figure path with nothing read or written (see :func:`record_evaluation`)."""
    out = evaluate_figures(model, config, store=False)
    return EvalResult(str(model), out.pooling, out.rows, out.seconds)


def known_model(catalog: Any, model: str) -> tuple[str, str]:
    """``(model_id, path)`` by the one model lookup (:func:`defsentflow.model.lookup.find_model`).

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
    with catalog.session():  # one open of the catalog file for both writes
        if Path(result.model).exists():
            # The id scores are filed under names the model (a row already filed keeps its fields): the
            # one writer of models rows, by the name a user passes for a model made elsewhere.
            catalog.register_model(model_id, portable_model_name(result.model), keep=True)
        catalog.record_metrics(model_id, rows, run_id=run_id)
    return len(rows)
