"""The ``harvest-pairs`` flow: corpus -> context scorer + index -> batches of labelled pairs (fan-out).

The sequence is the library's :func:`defsentflow.scoring.stages.run_harvest`; this flow hands it
the pieces as Prefect tasks (``tasks/harvest.py``). The batches are independent calls of one
fan-out, the same as PST's candidates: on the command's Dask cluster (``compute.address``,
``compute.local_workers > 0``, or the cluster of the command that called this flow), otherwise one
at a time in this process.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.compute import shared_paths
from defsentflow.scoring.config import HarvestConfig
from defsentflow.scoring.stages import run_harvest
from defsentflow.storage import data_root
from defsentflow.tasks.cluster import compute_cluster
from defsentflow.tasks.harvest import harvest_tasks

__all__ = ["harvest_pairs", "run_harvest_flow"]


@flow(name="harvest-pairs", log_prints=True)
def harvest_pairs(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Harvest labelled pairs for a config (a dict validated as ``HarvestConfig``), its batches on
    the cluster its ``compute:`` section asks for."""
    cfg = HarvestConfig.model_validate(config)
    with compute_cluster(cfg.compute, needs=shared_paths(cfg, data_root(cfg.root))):
        result = run_harvest(cfg, run_id=run_id, steps=harvest_tasks(cfg))
    print(f"harvest {result['key']}: {result['n_pairs']} pairs, {result['batches_computed']} batches computed "
          f"-> {result['path']}")
    return result


def run_harvest_flow(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Run :func:`harvest_pairs` (kept for the callers that name it: the CLI, the pipeline)."""
    return harvest_pairs(HarvestConfig.model_validate(config).model_dump(mode="json"), run_id=run_id)
