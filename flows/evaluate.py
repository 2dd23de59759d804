"""The ``evaluate`` flow: score one model on STS tasks (and the reverse dictionary), record, report.

The sequence is the library's :func:`defsentflow.evaluation.stage.run_evaluate`; this flow hands it
the pieces as Prefect tasks (``tasks/evaluation.py``) and may add the run report.
"""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow

from defsentflow.evaluation import EvaluateSection
from defsentflow.evaluation.stage import run_evaluate
from defsentflow.tasks.evaluation import EVALUATE_TASKS
from defsentflow.tasks.report import write_run_report


@flow(name="evaluate", log_prints=True)
def evaluate_flow(section: dict[str, Any], run_id: str | None = None, report: bool = False) -> dict[str, Any]:
    """Evaluate ``section["model"]``; returns the metric rows, the average and (if asked) the report paths."""
    out = run_evaluate(EvaluateSection.model_validate(section), run_id=run_id or f"eval-{uuid.uuid4().hex[:8]}",
                       steps=EVALUATE_TASKS)
    avg = out["average"]
    print(f"{out['model_id']}: {out['recorded']} metric rows" + (f", {avg['label']} = {avg['value']:.2f}" if avg else ""))
    if report:
        out["report"] = write_run_report(out["run_id"])
    return out
