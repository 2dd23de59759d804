"""The evaluation stage's one sequencer: resolve the model, evaluate it (or reuse a finished
identical evaluation), file the scores, own the run.

:func:`run_evaluate` serves ``defsentflow eval`` (the library's own steps, called in a row) and the
``evaluate`` flow (the same steps wrapped as Prefect tasks, ``tasks/evaluation.py``), so both write
the same ``runs``, ``stages`` and ``metrics`` rows and reuse by the same keys: a figure whose key
(:func:`~defsentflow.evaluation.figures.figure_key`: model content, task and its settings, pooling,
inputs, code version) finished before, in an ``eval``, a pipeline or PST's selection, is filed
again from the one store (``cache/evaluations``), not recomputed.

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
from defsentflow.evaluation.figures import evaluate_figures, run_head
from defsentflow.evaluation.sts import average_row
from defsentflow.evaluation.suite import EvalResult, record_evaluation
from defsentflow.model.lookup import find_model
from defsentflow.storage import Catalog, hash_config
from defsentflow.storage.runs import RunRecord

__all__ = ["EvaluateSteps", "evaluate_step", "record_step", "resolve_step", "run_evaluate"]


def resolve_step(section: EvaluateSection, run_id: str | None, root: str | None = None) -> dict[str, Any]:
    """``{"model_id", "path"}`` by the one model lookup (:func:`~defsentflow.model.lookup.find_model`:
    catalog id or alias, bundled name, folder, cached hub id; the catalog is only read)."""
    ref = find_model(section.model, root=root)
    return {"model_id": section.model_id or ref.model_id, "path": ref.path}


def evaluate_step(section: EvaluateSection, model: dict[str, Any], run_id: str | None = None,
                  root: str | None = None) -> dict[str, Any]:
    """Every figure of the section, by the one figure path (:func:`~defsentflow.evaluation.figures.evaluate_figures`):
    read back where a finished identical one is stored (``cached``: all were), else computed and
    stored; without a run nothing is read or written (``eval --no-record``)."""
    out = evaluate_figures(model["path"], section, root=root, model_id=model["model_id"], run_id=run_id,
                           store=run_id is not None, head=run_head(model["path"], section))
    return {"pooling": out.pooling, "rows": list(out.rows), "seconds": out.seconds, "average": average_row(out.rows),
            "cached": out.cached, "records": list(out.records)}


def record_step(model: dict[str, Any], evaluated: dict[str, Any], run_id: str, root: str | None = None) -> int:
    """File the figures written now (their records) and every row under the model id and this run;
    record the stage (computed or cached)."""
    cat = Catalog(root)
    result = EvalResult(model["path"], evaluated["pooling"], tuple(evaluated["rows"]), evaluated["seconds"])
    cached = evaluated.get("cached", False)
    with cat.session():  # one open of the catalog file for the records, the rows and the stage
        if evaluated.get("records"):
            cat.register_records(evaluated["records"])
        n = record_evaluation(cat, model["model_id"], result, run_id=run_id)
        cat.record_stage(run_id, "evaluate-model", "cached" if cached else "completed",
                         seconds=None if cached else sum(evaluated["seconds"].values()),
                         note=f"{n} metric rows for {model['model_id']}")
    return n


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
        evaluated = steps.evaluate(section, model, run_id, root)
        n = steps.record(model, evaluated, run_id, root) if run_id is not None else 0
        run.note = f"{n} metric rows for {model['model_id']}"
    return {"run_id": run_id, **model, **evaluated, "recorded": n}
