"""Prefect tasks for evaluation: thin calls into ``defsentflow.evaluation``.

``evaluate_model`` is a cached stage: its key covers the model's content hash, the evaluation
settings, the evaluation data's content hash and the code version, so re-evaluating an unchanged
model is free. Recording in the catalog is a separate, uncached task, so a cache hit still files
the scores under the current run.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.caching import stage_task
from tasks.retries import IO_RETRIES


@task(name="evaluate-resolve-model", cache_policy=NO_CACHE, **IO_RETRIES)
def resolve_model(section: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Start the run; find the model's catalog id and path; hash the model and the data files it reads."""
    from defsentflow.encoders import model_content_hash
    from defsentflow.evaluation import EvaluateSection, evaluation_inputs_hash, resolve_model as resolve
    from defsentflow.storage import Catalog, hash_config

    s = EvaluateSection.model_validate(section)
    cat = Catalog()
    cat.start_run("evaluate", config=section, config_hash=hash_config(section), run_id=run_id)
    model_id, path = resolve(cat, s.model)
    return {"model_id": s.model_id or model_id, "path": path, "model_hash": model_content_hash(path),
            "data_hash": evaluation_inputs_hash(s)}


@stage_task(name="evaluate-model")
def evaluate_model(section: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    """Run the STS tasks (one encoding pass) and revdict; return the metric rows."""
    from defsentflow.evaluation import EvaluateSection, run_evaluation

    result = run_evaluation(model["path"], EvaluateSection.model_validate(section))
    return {"pooling": result.pooling, "rows": list(result.rows), "seconds": result.seconds, "average": result.average}


@task(name="evaluate-record", cache_policy=NO_CACHE, **IO_RETRIES)
def record_evaluation(model: dict[str, Any], evaluated: dict[str, Any], run_id: str, cached: bool = False) -> int:
    """File the rows under the model id and this run; record the stage (computed or cached)."""
    from defsentflow.evaluation import EvalResult, record_evaluation as record
    from defsentflow.storage import Catalog

    cat = Catalog()
    result = EvalResult(model["path"], evaluated["pooling"], tuple(evaluated["rows"]), evaluated["seconds"])
    n = record(cat, model["model_id"], result, run_id=run_id)
    cat.record_stage(run_id, "evaluate-model", "cached" if cached else "completed",
                     seconds=None if cached else sum(evaluated["seconds"].values()),
                     note=f"{n} metric rows for {model['model_id']}")
    return n
