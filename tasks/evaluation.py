"""Prefect wrappers of the evaluation stage's pieces: tasks, no decisions.

The order is the library's (:func:`defsentflow.evaluation.stage.run_evaluate`); the ``evaluate``
flow hands it :data:`EVALUATE_TASKS`. ``evaluate-model`` is a cached stage: its key covers the
model's content hash, the evaluation settings, the evaluation data's content hash and the code
version (never the id the scores are filed under), so re-evaluating an unchanged model is free.
Recording is a separate, uncached task, so a cache hit still files the scores under the current run.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from defsentflow.encoders import model_content_hash
from defsentflow.evaluation import EvaluateSection, evaluation_inputs_hash
from defsentflow.evaluation.stage import EvaluateSteps, evaluate_step, record_step, resolve_step
from defsentflow.tasks.caching import stage_task
from defsentflow.tasks.retries import IO_RETRIES

__all__ = ["EVALUATE_TASKS"]


@task(name="evaluate-resolve-model", cache_policy=NO_CACHE, **IO_RETRIES)
def resolve_evaluated_model(section: EvaluateSection, run_id: str | None, root: str | None = None) -> dict[str, Any]:
    """The model's catalog id and path, with the content hashes the evaluation's cache key needs."""
    model = resolve_step(section, run_id, root)
    return {**model, "model_hash": model_content_hash(model["path"]), "data_hash": evaluation_inputs_hash(section)}


@stage_task(name="evaluate-model", **IO_RETRIES)
def evaluate_resolved_model(section: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    """Run the STS tasks (one encoding pass) and revdict; return the metric rows."""
    return evaluate_step(EvaluateSection.model_validate(section), model)


def _evaluate(section: EvaluateSection, model: dict[str, Any]) -> dict[str, Any]:
    # the cache key leaves out the id the scores are filed under: a pipeline names its selected
    # model after its run, which must not defeat the cache
    state = evaluate_resolved_model(section.model_dump(mode="json", exclude={"model_id"}),
                                    {k: v for k, v in model.items() if k != "model_id"}, return_state=True)
    return {**state.result(), "cached": state.name == "Cached"}


EVALUATE_TASKS = EvaluateSteps(
    resolve=resolve_evaluated_model,
    evaluate=_evaluate,
    record=task(name="evaluate-record", cache_policy=NO_CACHE, **IO_RETRIES)(record_step),
)
