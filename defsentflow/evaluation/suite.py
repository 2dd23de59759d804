"""The evaluation suite: the requested tasks for one model, recorded in the catalog.

This is what ``defsentflow eval`` and the ``evaluate`` flow run, for an
:class:`~defsentflow.evaluation.config.EvalConfig`: a loop over the task registry's evaluators
(:data:`defsentflow.evaluation.tasks.EVALUATORS`: STS tasks in one encoding pass, the reverse
dictionary and word prediction, which need a dictionary dataset). :func:`evaluation_key` names a
finished evaluation by content, so an identical one is reused (:mod:`defsentflow.evaluation.stage`).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from defsentflow.encoders import model_content_hash, validate_pooling
from defsentflow.encoders.finite import NonFiniteError
from defsentflow.encoders.loading import BUNDLED_ALIASES, resolve_model_path
from defsentflow.evaluation.config import (
    EVAL_TASKS,
    EvalConfig,
    EvaluateSection,
    default_data_dir,
    validate_eval_tasks,
)
from defsentflow.evaluation.sts import average_row
from defsentflow.evaluation.tasks import EVALUATORS
from defsentflow.storage import code_version, combine_hashes, hash_config

__all__ = ["EVAL_TASKS", "EvalConfig", "EvalResult", "EvaluateSection", "default_data_dir", "default_pooling",
           "evaluation_inputs_hash", "evaluation_key", "known_model", "record_evaluation", "resolve_model",
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
    """The pooling a model was trained with (its ``defsentflow.json``), else ``mean``."""
    meta = Path(resolve_model_path(model)) / "defsentflow.json"
    if meta.is_file():
        try:
            return str(json.loads(meta.read_text()).get("pooling") or "mean")
        except ValueError:
            return "mean"
    return "mean"


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


def evaluation_key(config: EvalConfig, model_path: str | os.PathLike) -> str:
    """The content key of one evaluation: the model's content, the inputs' content, every setting
    that changes a figure (the pooling resolved as :func:`run_evaluation` resolves it) and the code
    version. An evaluation finished under the same key has the same figures."""
    settings = {k: v for k, v in config.model_dump(mode="json").items() if k not in _NOT_SETTINGS}
    settings["pooling"] = config.pooling or default_pooling(model_path)
    return combine_hashes(["evaluation", model_content_hash(model_path), evaluation_inputs_hash(config),
                           hash_config(settings), code_version()])


def resolve_model(catalog: Any, model: str) -> tuple[str, str]:
    """``(model_id, path)``: a registered model by id or path, else the name as given."""
    rows = catalog.query("SELECT model_id, path FROM models WHERE model_id = ?", [model])
    if rows:
        return rows[0]["model_id"], rows[0]["path"]
    path = resolve_model_path(model)
    if Path(path).exists():
        absolute = str(Path(path).resolve())
        # a properly registered id (with a method) before one that scores were merely filed under
        # the catalog stores paths relative to the data root (Catalog.rel)
        rows = catalog.query("SELECT model_id, path FROM models WHERE path = ? OR path = ? "
                             "ORDER BY method IS NULL, created_at", [path, catalog.rel(absolute)])
        if rows:
            return rows[0]["model_id"], rows[0]["path"]
    return model, path


def known_model(catalog: Any, model: str) -> tuple[str, str]:
    """:func:`resolve_model`, refusing a name that is nothing this machine has: not a catalog id, an
    existing directory, a bundled alias, nor a Hugging Face id in the local cache (asked offline,
    or without an ``org/`` prefix, it would only end in a hub connection error).

    Raises:
        ValueError: ``unknown model 'x'``, with the catalog ids it could have meant.
    """
    model_id, path = resolve_model(catalog, model) if catalog.path.is_file() else (model, model)
    if path != model or Path(path).exists() or model in BUNDLED_ALIASES:
        return model_id, path
    try:
        from huggingface_hub import try_to_load_from_cache  # lazy: huggingface_hub loads only where it is used

        cached = isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # noqa: BLE001 - a malformed id is no cached model
        cached = False
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    if cached or ("/" in model and not offline):
        return model_id, path
    ids = [r["model_id"] for r in catalog.query("SELECT model_id FROM models ORDER BY created_at DESC LIMIT 5")] \
        if catalog.path.is_file() else []
    raise ValueError(f"unknown model {model!r}: not a model id in the catalog, a directory, a bundled name "
                     f"({', '.join(BUNDLED_ALIASES)}) or a cached Hugging Face id"
                     + (f"; newest ids: {', '.join(ids)}" if ids else ""))


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
