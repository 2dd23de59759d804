"""The ``harvest-pairs`` flow: corpus -> context scorer + index -> batches of labelled pairs (fan-out).

The sequence is the library's :func:`defsentflow.scoring.stages.run_harvest`; this flow hands it
the pieces as Prefect tasks (``tasks/harvest.py``). The batches are independent tasks: with
``dask.address`` (a running scheduler) or ``dask.local_workers > 0`` (a local cluster) in the config
they run on a ``prefect_dask.DaskTaskRunner``; otherwise one at a time in this process.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.scoring.config import HarvestConfig
from defsentflow.scoring.stages import run_harvest
from tasks.harvest import HARVEST_TASKS

__all__ = ["harvest_pairs", "task_runner_for", "run_harvest_flow"]


@flow(name="harvest-pairs", log_prints=True)
def harvest_pairs(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Harvest labelled pairs for a config (a dict validated as ``HarvestConfig``)."""
    result = run_harvest(HarvestConfig.model_validate(config), run_id=run_id, steps=HARVEST_TASKS)
    print(f"harvest {result['key']}: {result['n_pairs']} pairs, {result['batches_computed']} batches computed "
          f"-> {result['path']}")
    return result


def task_runner_for(config: dict[str, Any]):
    """A ``DaskTaskRunner`` when the config's ``dask`` section asks for one, else one task at a time."""
    dask = config.get("dask") or {}
    if dask.get("address"):
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=dask["address"])
    if dask.get("local_workers"):
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(cluster_kwargs={"n_workers": dask["local_workers"], "processes": dask.get("processes", False),
                                              "threads_per_worker": dask.get("threads_per_worker", 1),
                                              "dashboard_address": None})
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=1)


def run_harvest_flow(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Run :func:`harvest_pairs` with the task runner its config asks for."""
    config = HarvestConfig.model_validate(config).model_dump(mode="json")
    return harvest_pairs.with_options(task_runner=task_runner_for(config))(config, run_id=run_id)
