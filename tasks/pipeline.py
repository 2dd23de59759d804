"""Tasks of the pipeline flow itself: the run record, change detection and the final summary."""

from __future__ import annotations

import json
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE


@task(name="pipeline-fingerprint", cache_policy=NO_CACHE)
def input_fingerprint(config: dict[str, Any]) -> dict[str, Any]:
    """Content hashes of the dictionary and corpus sources, the config and the code version."""
    from defsentflow.pipeline import input_fingerprint as fingerprint

    return fingerprint(config)


@task(name="pipeline-start", cache_policy=NO_CACHE)
def start_pipeline_run(config: dict[str, Any], fingerprint: dict[str, Any], only_if_changed: bool,
                       run_id: str | None = None) -> dict[str, Any]:
    """Open the run record; with ``only_if_changed``, end it as 'unchanged' when a completed run saw these inputs."""
    from defsentflow.pipeline import start_run

    return start_run(config, fingerprint, only_if_changed=only_if_changed, run_id=run_id)


@task(name="pipeline-evaluation-plan", cache_policy=NO_CACHE)
def evaluation_plan(config: dict[str, Any], selected: dict[str, Any], surrogate: dict[str, Any] | None,
                    base_model: str, trained: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The evaluate sections: the selected encoder, PST's best trained one (if asked) and each baseline."""
    from defsentflow.pipeline import evaluation_plan as plan

    return plan(config, selected, surrogate, base_model, trained)


@task(name="pipeline-finish", cache_policy=NO_CACHE)
def finish_pipeline_run(run_id: str, status: str, summary: dict[str, Any]) -> dict[str, Any]:
    from defsentflow.storage import Catalog

    Catalog().end_run(run_id, status, note=json.dumps(summary, default=str)[:4000], flow="pipeline")
    return summary
