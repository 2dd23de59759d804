"""The evaluation stage's one sequencer: resolve the model, evaluate it (or reuse a finished
identical evaluation), file the scores, own the run.

:func:`run_evaluate` serves ``defsentflow eval`` (the library's own steps, called in a row) and the
``evaluate`` flow (the same steps wrapped as Prefect tasks, ``tasks/evaluation.py``), so both write
the same ``runs``, ``stages`` and ``metrics`` rows and reuse by the same key: an evaluation whose
:func:`~defsentflow.evaluation.suite.evaluation_key` (model content, task inputs, settings, code
version) finished before is filed again from the one evaluation store (:mod:`defsentflow.evaluation.reuse`,
``cache/evaluations``), not recomputed.

Example:
    >>> out = run_evaluate(EvaluateSection(model="minilm", tasks=("sts12",)), run_id="eval-1")
    >>> out["average"]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from defsentflow.evaluation.config import EvaluateSection
from defsentflow.evaluation.reuse import store_evaluation, stored_evaluation
from defsentflow.evaluation.sts import average_row
from defsentflow.evaluation.suite import EvalResult, evaluation_key, record_evaluation, run_evaluation
from defsentflow.model.lookup import find_model
from defsentflow.storage import Catalog, hash_config
from defsentflow.storage.locks import artifact_lock
from defsentflow.storage.runs import RunRecord

__all__ = ["EvaluateSteps", "evaluate_step", "record_step", "resolve_step", "run_evaluate"]


def resolve_step(section: EvaluateSection, run_id: str | None, root: str | None = None) -> dict[str, Any]:
    """``{"model_id", "path"}`` by the one model lookup (:func:`~defsentflow.model.lookup.find_model`:
    catalog id or alias, bundled name, folder, cached hub id; the catalog is only read)."""
    ref = find_model(section.model, root=root)
    return {"model_id": section.model_id or ref.model_id, "path": ref.path}


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
    cached = evaluated.get("cached", False)
    with cat.session():  # one open of the catalog file for the rows and the stage
        n = record_evaluation(cat, model["model_id"], result, run_id=run_id)
        cat.record_stage(run_id, "evaluate-model", "cached" if cached else "completed",
                         seconds=None if cached else sum(evaluated["seconds"].values()),
                         note=f"{n} metric rows for {model['model_id']}")
    return n


def _reused_or_evaluated(section: EvaluateSection, model: dict[str, Any], run_id: str | None, root: str | None,
                         steps: EvaluateSteps) -> dict[str, Any]:
    """A finished identical evaluation (same content key, :mod:`defsentflow.evaluation.reuse`), else a
    new one, stored for the next. Without a run nothing is read or written: ``eval --no-record``."""
    if run_id is None:
        return steps.evaluate(section, model)
    key = evaluation_key(section, model["path"])
    with artifact_lock(key, root):  # two runs at the same evaluation: the second finds the first's rows
        found = stored_evaluation(key, root)
        if found is not None:
            return {**found, "average": average_row(found["rows"]), "cached": True}
        evaluated = steps.evaluate(section, model)
        store_evaluation(key, evaluated, run_id=run_id, root=root)
    return evaluated


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
                  if run_id is not None else contextlib.nullcontext(RunRecord(None)))
    with run_record as run:
        model = steps.resolve(section, run_id, root)
        evaluated = _reused_or_evaluated(section, model, run_id, root, steps)
        n = steps.record(model, evaluated, run_id, root) if run_id is not None else 0
        run.note = f"{n} metric rows for {model['model_id']}"
    return {"run_id": run_id, **model, **evaluated, "recorded": n}
