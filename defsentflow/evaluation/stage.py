"""The evaluation stage's one sequencer: resolve the model, evaluate it (or reuse a finished
identical evaluation), file the scores, own the run.

:func:`run_evaluate` serves ``defsentflow eval`` (the library's own steps, called in a row) and the
``evaluate`` flow (the same steps wrapped as Prefect tasks, ``tasks/evaluation.py``), so both write
the same ``runs``, ``stages`` and ``metrics`` rows and reuse by the same key: an evaluation whose
:func:`~defsentflow.evaluation.suite.evaluation_key` (model content, task inputs, settings, code
version) finished before is filed again from the catalog's ``evaluations`` table, not recomputed.

Example:
    >>> out = run_evaluate(EvaluateSection(model="minilm", tasks=("sts12",)), run_id="eval-1")
    >>> out["average"]
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from defsentflow.evaluation.config import EvaluateSection
from defsentflow.evaluation.suite import EvalResult, evaluation_key, record_evaluation, resolve_model, run_evaluation
from defsentflow.storage import Catalog, hash_config

__all__ = ["EvaluateSteps", "evaluate_step", "finished_evaluation", "keep_evaluation", "record_step", "resolve_step",
           "run_evaluate"]


def resolve_step(section: EvaluateSection, run_id: str | None, root: str | None = None) -> dict[str, Any]:
    """``{"model_id", "path"}``: a registered model by id or path (the catalog is read only when the
    run is recorded), else the name as given."""
    model_id, path = resolve_model(Catalog(root), section.model) if run_id is not None else (section.model, section.model)
    return {"model_id": section.model_id or model_id, "path": path}


def evaluate_step(section: EvaluateSection, model: dict[str, Any]) -> dict[str, Any]:
    """Run the STS tasks (one encoding pass) and the dictionary tasks; ``cached`` is the executor's
    word for a result it found rather than computed (never, here)."""
    result = run_evaluation(model["path"], section)
    return {"pooling": result.pooling, "rows": list(result.rows), "seconds": result.seconds,
            "average": result.average, "cached": False}


def record_step(model: dict[str, Any], evaluated: dict[str, Any], run_id: str, root: str | None = None) -> int:
    """File the rows under the model id and this run; record the stage (computed or cached)."""
    cat = Catalog(root)
    result = EvalResult(model["path"], evaluated["pooling"], tuple(evaluated["rows"]), evaluated["seconds"])
    n = record_evaluation(cat, model["model_id"], result, run_id=run_id)
    cached = evaluated.get("cached", False)
    cat.record_stage(run_id, "evaluate-model", "cached" if cached else "completed",
                     seconds=None if cached else sum(evaluated["seconds"].values()),
                     note=f"{n} metric rows for {model['model_id']}")
    return n


def finished_evaluation(catalog: Catalog, key: str) -> dict[str, Any] | None:
    """The evaluation finished under ``key`` (as :func:`evaluate_step` returns it, ``cached`` True), or None."""
    rows = catalog.query("SELECT pooling, rows FROM evaluations WHERE eval_key = ?", [key])
    if not rows:
        return None
    found = json.loads(rows[0]["rows"]) if isinstance(rows[0]["rows"], str) else rows[0]["rows"]
    result = EvalResult("", rows[0]["pooling"], tuple(found))
    return {"pooling": result.pooling, "rows": list(result.rows), "seconds": {}, "average": result.average,
            "cached": True}


def keep_evaluation(catalog: Catalog, key: str, evaluated: dict[str, Any], run_id: str | None) -> None:
    """Keep a computed evaluation under its key, for the next identical one."""
    catalog.execute("INSERT OR REPLACE INTO evaluations (eval_key, pooling, rows, seconds, run_id) VALUES (?, ?, ?, ?, ?)",
                    [key, evaluated["pooling"], json.dumps(evaluated["rows"], default=str),
                     json.dumps(evaluated["seconds"]), run_id])


@dataclass(frozen=True)
class EvaluateSteps:
    """The stage's pieces: the library's functions here, Prefect tasks in the ``evaluate`` flow."""

    resolve: Callable[..., dict[str, Any]] = resolve_step
    evaluate: Callable[..., dict[str, Any]] = evaluate_step
    record: Callable[..., int] = record_step


LOCAL = EvaluateSteps()


def run_evaluate(section: EvaluateSection, *, run_id: str | None = None, root: str | os.PathLike | None = None,
                 steps: EvaluateSteps = LOCAL) -> dict[str, Any]:
    """Evaluate ``section.model``; with a ``run_id``, open an ``evaluate`` run, reuse a finished
    identical evaluation or keep this one for the next, file the metric rows under it and close it;
    without one, write nothing (``defsentflow eval --no-record``).

    Returns:
        ``run_id``, ``model_id``, ``path``, ``pooling``, ``rows``, ``average``, ``seconds`` (per
        part), ``cached`` and ``recorded`` (metric rows written; 0 without a run).
    """
    root = None if root is None else str(root)
    # without a run id nothing is opened or written, not even the catalog
    run_record = (Catalog(root).recorded_run("evaluate", run_id, config=section.model_dump(mode="json"),
                                              config_hash=hash_config(section))
                  if run_id is not None else contextlib.nullcontext({}))
    with run_record as run:
        model = steps.resolve(section, run_id, root)
        key = evaluation_key(section, model["path"]) if run_id is not None else None
        evaluated = finished_evaluation(Catalog(root), key) if key is not None else None
        if evaluated is None:
            evaluated = steps.evaluate(section, model)
            if key is not None:
                keep_evaluation(Catalog(root), key, evaluated, run_id)
        n = steps.record(model, evaluated, run_id, root) if run_id is not None else 0
        run["note"] = f"{n} metric rows for {model['model_id']}"
    return {"run_id": run_id, **model, **evaluated, "recorded": n}
