"""Prefect wrappers of the harvest's pieces and the surrogate: tasks, no decisions.

The order of the pieces is the library's (:func:`defsentflow.scoring.stages.run_harvest`); the
``harvest-pairs`` flow hands :data:`HARVEST_TASKS` to it. Every task takes the config the library
validated once (a :class:`HarvestConfig`) plus small references (keys and paths). The library
caches by content itself (scorer, index and pairs artifacts; a batch whose Parquet part exists is
skipped), so the tasks carry no Prefect cache of their own.
"""

from __future__ import annotations

from typing import Any

from prefect import task, unmapped
from prefect.cache_policies import NO_CACHE

from defsentflow.scoring.config import HarvestConfig
from defsentflow.scoring.stages import (
    HarvestSteps,
    finalize_harvest,
    index_step,
    plan_harvest,
    prepare_inputs,
    run_batch,
    scorer_step,
)
from defsentflow.tasks.retries import IO_RETRIES, TRAIN_RETRIES
from defsentflow.training.surrogate import run_surrogate

__all__ = ["HARVEST_TASKS", "train_surrogate_encoder"]


def _task(name: str, fn, retries: dict[str, Any] | None = None):
    return task(name=name, cache_policy=NO_CACHE, persist_result=False, **(retries or {}))(fn)


harvest_pair_batch = _task("harvest-pair-batch", run_batch, IO_RETRIES)


def _map_batches(cfg: HarvestConfig, refs: dict, plan: dict, batches: list[dict]) -> list[dict]:
    """One ``harvest-pair-batch`` task per batch, on the flow's task runner (Dask when asked)."""
    return harvest_pair_batch.map(unmapped(cfg), unmapped(refs), unmapped(plan), batches).result()


HARVEST_TASKS = HarvestSteps(
    prepare=_task("harvest-prepare-corpus", prepare_inputs, IO_RETRIES),
    train_scorer=_task("train-context-scorer", scorer_step, TRAIN_RETRIES),
    build_index=_task("build-chunk-index", index_step, IO_RETRIES),
    plan=_task("plan-pair-harvest", plan_harvest),
    map_batches=_map_batches,
    finalize=_task("finalize-pair-harvest", finalize_harvest, IO_RETRIES),
)


@task(name="train-surrogate-encoder", cache_policy=NO_CACHE, **TRAIN_RETRIES)
def train_surrogate_encoder(config: dict[str, Any], pairs: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Train (or find) the surrogate encoder on the harvested pairs and register it."""
    return run_surrogate(HarvestConfig.model_validate(config), pairs, run_id=run_id)
