"""The ``harvest-pairs`` flow: corpus -> context scorer + index -> batches of labelled pairs (fan-out).

The batches are independent Prefect tasks. With ``compute.address`` (a running scheduler),
``compute.local_workers > 0`` (a local cluster of worker processes) or the command's cluster they
run on a ``prefect_dask.DaskTaskRunner``; otherwise one at a time in this process.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, unmapped

from tasks.harvest import (
    build_chunk_index,
    finalize_pair_harvest,
    harvest_pair_batch,
    plan_pair_harvest,
    prepare_corpus,
    train_context_scorer,
)

__all__ = ["harvest_pairs", "task_runner_for", "run_harvest_flow"]


@flow(name="harvest-pairs", log_prints=True)
def harvest_pairs(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Harvest labelled pairs for a config (a dict validated as ``HarvestConfig``)."""
    from defsentflow.scoring.config import HarvestConfig

    config = HarvestConfig.model_validate(config).model_dump(mode="json")
    inputs = prepare_corpus(config, run_id)
    refs = {**inputs, "scorer": train_context_scorer(config, inputs, run_id),
            "index": build_chunk_index(config, inputs, run_id)}
    plan = plan_pair_harvest(config, refs)
    futures = harvest_pair_batch.map(unmapped(config), unmapped(refs), unmapped(plan), plan["batches"])
    result = finalize_pair_harvest(config, refs, plan, futures.result(), run_id)
    print(f"harvest {result['key']}: {result['n_pairs']} pairs, mean {result['mean']:.3f} std {result['std']:.3f}, "
          f"{result['batches_computed']} of {len(plan['batches'])} batches computed -> {result['path']}")
    return result


def task_runner_for(address: str | None):
    """A ``DaskTaskRunner`` on the command's cluster (``compute:``), else one task at a time."""
    if address:
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=address)
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=1)


def run_harvest_flow(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Run :func:`harvest_pairs` with the task runner its config asks for."""
    from defsentflow.scoring.config import HarvestConfig

    from tasks.fanout import compute_cluster

    cfg = HarvestConfig.model_validate(config)
    with compute_cluster(cfg.compute) as address:
        return harvest_pairs.with_options(task_runner=task_runner_for(address))(cfg.model_dump(mode="json"),
                                                                                run_id=run_id)
