"""The evaluation suite: the requested tasks for one model, recorded in the catalog.

This is what ``defsentflow eval`` and the ``evaluate`` flow run, for an
:class:`~defsentflow.evaluation.config.EvalConfig`: a loop over the task registry's evaluators
(:data:`defsentflow.evaluation.tasks.EVALUATORS`: STS tasks in one encoding pass, the reverse
dictionary and word prediction, which need a dictionary dataset). :func:`evaluation_key` names a
finished evaluation by content, so an identical one is reused (:mod:`defsentflow.evaluation.stage`).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from defsentflow.encoders import model_content_hash, validate_pooling
from defsentflow.encoders.finite import NonFiniteError
from defsentflow.encoders.loading import portable_model_name, resolve_model_path
from defsentflow.evaluation.config import (
    EVAL_TASKS,
    EvalConfig,
    EvaluateSection,
    default_data_dir,
    validate_eval_tasks,
)
from defsentflow.evaluation.sts import average_row
from defsentflow.evaluation.tasks import EVALUATORS
from defsentflow.model import HEAD_DEFAULTS, model_head
from defsentflow.model.lookup import find_model
from defsentflow.storage import code_version, combine_hashes, hash_config

__all__ = ["EVAL_TASKS", "EvalConfig", "EvalResult", "EvaluateSection", "default_data_dir", "default_pooling",
           "evaluation_inputs_hash", "evaluation_key", "known_model", "record_evaluation",
           "run_evaluation", "validate_eval_tasks"]

# Fields of an evaluation config that change no figure: where it runs, how it is cached, the id the
# scores are filed under; the data folder is named by the content of the files it holds.
_NOT_SETTINGS = frozenset({"model", "model_id", "device", "cache", "data_dir"})


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
    """The pooling a model was trained with (its head, :func:`defsentflow.model.model_head`)."""
    try:
        return model_head(resolve_model_path(model)).pooling
    except ValueError:  # an unreadable record: the default, as for a bare checkpoint
        return HEAD_DEFAULTS["pooling"]


def run_evaluation(model: str | os.PathLike, config: EvalConfig) -> EvalResult:
    """Evaluate ``model`` on ``config.tasks``, one evaluator of the registry after the other, every
    task with the evaluation's pooling and max length; nothing is written (see :func:`record_evaluation`)."""
    pooling = validate_pooling(config.pooling or default_pooling(model))
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    for evaluator in EVALUATORS:
        if evaluator.tasks(config):
            t0 = time.perf_counter()
            rows += evaluator.run(str(model), config, pooling)
            seconds[evaluator.name] = time.perf_counter() - t0
    return EvalResult(str(model), pooling, tuple(rows), seconds)


def evaluation_inputs_hash(config: EvalConfig) -> str:
    """Content hash of every input the config's tasks read: each STS file (a missing one hashed as
    missing, so adding a held-back split later changes the hash) and the dictionary dataset's key."""
    return combine_hashes([part for evaluator in EVALUATORS if evaluator.tasks(config)
                           for part in evaluator.inputs(config)])


def evaluation_key(config: EvalConfig, model_path: str | os.PathLike, *, model_key: str | None = None,
                   inputs_hash: str | None = None) -> str:
    """The content key of one evaluation: the model's content, the inputs' content, every setting
    that changes a figure (the pooling resolved as :func:`run_evaluation` resolves it) and the code
    version. An evaluation finished under the same key has the same figures.

    ``model_key``: the model's content key when the caller has one (a PST candidate's artifact key,
    known before it is trained), else the hash of its files; ``inputs_hash``: the content of the
    inputs when the caller has hashed them (a worker reads no catalog), else
    :func:`evaluation_inputs_hash`.
    """
    settings = {k: v for k, v in config.model_dump(mode="json").items() if k not in _NOT_SETTINGS}
    settings["pooling"] = config.pooling or default_pooling(model_path)
    return combine_hashes(["evaluation", model_key or model_content_hash(model_path),
                           inputs_hash or evaluation_inputs_hash(config), hash_config(settings), code_version()])


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
