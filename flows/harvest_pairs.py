"""The ``harvest-pairs`` flow: corpus -> context scorer + index -> batches of labelled pairs (fan-out).

The sequence is the library's :func:`defsentflow.scoring.stages.run_harvest`; this flow hands it
the pieces as Prefect tasks (``tasks/harvest.py``). The batches are independent tasks: with
``compute.address`` (a running scheduler), ``compute.local_workers > 0`` (a local cluster of
worker processes) or the command's cluster they run on a ``prefect_dask.DaskTaskRunner``;
otherwise one at a time in this process.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.scoring.config import HarvestConfig
from defsentflow.scoring.stages import run_harvest
from defsentflow.tasks.fanout import compute_cluster
from defsentflow.tasks.harvest import HARVEST_TASKS

__all__ = ["harvest_pairs", "task_runner_for", "run_harvest_flow"]


@flow(name="harvest-pairs", log_prints=True)
def harvest_pairs(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Harvest labelled pairs for a config (a dict validated as ``HarvestConfig``)."""
    result = run_harvest(HarvestConfig.model_validate(config), run_id=run_id, steps=HARVEST_TASKS)
    print(f"harvest {result['key']}: {result['n_pairs']} pairs, {result['batches_computed']} batches computed "
          f"-> {result['path']}")
    return result


def task_runner_for(address: str | None):
    """A ``DaskTaskRunner`` on the command's cluster (``compute:``), else one task at a time."""
    if address:
        from prefect_dask import DaskTaskRunner  # lazy: prefect-dask imports distributed

        return DaskTaskRunner(address=address)
    from prefect.task_runners import ThreadPoolTaskRunner  # lazy: only without a cluster

    return ThreadPoolTaskRunner(max_workers=1)


def run_harvest_flow(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Run :func:`harvest_pairs` on the cluster its ``compute:`` section asks for."""
    cfg = HarvestConfig.model_validate(config)
    with compute_cluster(cfg.compute) as address:
        return harvest_pairs.with_options(task_runner=task_runner_for(address))(cfg.model_dump(mode="json"),
                                                                                run_id=run_id)
