"""Prefect wrappers of the evaluation stage's pieces: tasks, no decisions.

The order is the library's (:func:`defsentflow.evaluation.stage.run_evaluate`); the ``evaluate``
flow hands it :data:`EVALUATE_TASKS`. Reuse is the library's too: a stored figure (same key:
the model's files, the task's settings, the pooling, the data's files, the code version; never the
id the scores are filed under) is read back instead of computed (:mod:`defsentflow.evaluation.figures`),
the same under ``defsentflow eval``, a flow, a deployment and PST's selection. Recording is a separate task, so a
reused evaluation still files its scores under the current run.
"""

from __future__ import annotations

from defsentflow.evaluation.stage import EvaluateSteps, evaluate_step, record_step, resolve_step
from defsentflow.tasks.retries import IO_RETRIES
from defsentflow.tasks.step import step_task

__all__ = ["EVALUATE_TASKS"]

EVALUATE_TASKS = EvaluateSteps(
    resolve=step_task(resolve_step, "evaluate-resolve-model", retries=IO_RETRIES),
    evaluate=step_task(evaluate_step, "evaluate-model", retries=IO_RETRIES),
    record=step_task(record_step, "evaluate-record", retries=IO_RETRIES),
)
