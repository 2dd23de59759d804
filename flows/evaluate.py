"""The ``evaluate`` flow: score one model on STS tasks (and the reverse dictionary), record, report.

The flow only sequences tasks (``tasks/evaluation.py``, ``tasks/report.py``); what is evaluated
and how is :class:`defsentflow.evaluation.EvaluateSection`, validated here at the boundary.
"""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow

from tasks.evaluation import evaluate_model, record_evaluation, resolve_model
from tasks.report import write_run_report


@flow(name="evaluate", log_prints=True)
def evaluate_flow(section: dict[str, Any], run_id: str | None = None, report: bool = False) -> dict[str, Any]:
    """Evaluate ``section["model"]``; returns the metric rows, the average and (if asked) the report paths."""
    from defsentflow.evaluation import EvaluateSection
    from defsentflow.storage import Catalog

    section = EvaluateSection.model_validate(section).model_dump(mode="json")
    run_id = run_id or f"eval-{uuid.uuid4().hex[:8]}"
    try:
        model = resolve_model(section, run_id)
        # Cached by what is evaluated (content hashes and settings), not by the id it is filed under:
        # a pipeline names its selected model after its run, which must not defeat the cache.
        state = evaluate_model({k: v for k, v in section.items() if k != "model_id"},
                               {k: v for k, v in model.items() if k != "model_id"}, return_state=True)
        evaluated = state.result()
        n = record_evaluation(model, evaluated, run_id, cached=state.name == "Cached")
    except BaseException as exc:
        Catalog().end_run(run_id, "failed", note=f"{type(exc).__name__}: {exc}")
        raise
    Catalog().end_run(run_id, "completed")
    avg = evaluated["average"]
    print(f"{model['model_id']}: {n} metric rows" + (f", {avg['label']} = {avg['value']:.2f}" if avg else ""))
    out = {"run_id": run_id, "model_id": model["model_id"], "rows": evaluated["rows"], "average": avg}
    if report:
        out["report"] = write_run_report(run_id)
    return out
