"""Prefect wrappers of the evaluation stage's pieces: tasks, no decisions.

The order is the library's (:func:`defsentflow.evaluation.stage.run_evaluate`); the ``evaluate``
flow hands it :data:`EVALUATE_TASKS`. Reuse is the library's too: a stored figure (same key:
the model's files, the task's settings, the pooling, the data's files, the code version; never the
id the scores are filed under) is read back instead of computed (:mod:`defsentflow.evaluation.figures`),
the same under ``defsentflow eval``, a flow, a deployment and PST's selection. Recording is a separate task, so a
reused evaluation still files its scores under the current run.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from defsentflow.evaluation.stage import EvaluateSteps, evaluate_step, record_step, resolve_step
from defsentflow.tasks.retries import IO_RETRIES

__all__ = ["EVALUATE_TASKS"]

EVALUATE_TASKS = EvaluateSteps(
    resolve=task(name="evaluate-resolve-model", cache_policy=NO_CACHE, **IO_RETRIES)(resolve_step),
    evaluate=task(name="evaluate-model", cache_policy=NO_CACHE, **IO_RETRIES)(evaluate_step),
    record=task(name="evaluate-record", cache_policy=NO_CACHE, **IO_RETRIES)(record_step),
)
