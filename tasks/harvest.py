"""Prefect wrappers of the harvest's pieces and the surrogate: tasks, no decisions.

The order of the pieces is the library's (:func:`defsentflow.scoring.stages.run_harvest`); the
``harvest-pairs`` flow hands :func:`harvest_tasks` to it: the stages as tasks, and the batches
through the same fan-out as PST's candidates (``harvest-pair-batch`` tasks on the command's Dask
cluster, else one after another). Every task takes the config the library validated once (a
:class:`HarvestConfig`) plus small references (keys and paths). The library caches by content
itself (scorer, index and pairs artifacts; a batch whose Parquet part exists is skipped), so the
tasks carry no Prefect cache of their own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from defsentflow.scoring.config import HarvestConfig
from defsentflow.scoring.stages import (
    HarvestSteps,
    finalize_harvest,
    index_step,
    plan_harvest,
    prepare_inputs,
    scorer_step,
)
from defsentflow.tasks.fanout import fan_out_from_env
from defsentflow.tasks.retries import IO_RETRIES, TRAIN_RETRIES
from defsentflow.tasks.step import step_task
from defsentflow.training.surrogate import run_surrogate

__all__ = ["HARVEST_TASKS", "harvest_tasks", "train_surrogate_encoder"]

HARVEST_TASKS = HarvestSteps(
    prepare=step_task(prepare_inputs, "harvest-prepare-corpus", retries=IO_RETRIES),
    train_scorer=step_task(scorer_step, "train-context-scorer", retries=TRAIN_RETRIES),
    build_index=step_task(index_step, "build-chunk-index", retries=IO_RETRIES),
    plan=step_task(plan_harvest, "plan-pair-harvest"),
    finalize=step_task(finalize_harvest, "finalize-pair-harvest", retries=IO_RETRIES),
)


def harvest_tasks(cfg: HarvestConfig) -> HarvestSteps:
    """The harvest's executor for a flow: the tasks above, and one ``harvest-pair-batch`` task per
    batch (retried after a delay: a lost worker, a busy disk) at the harvest's own ``threads``."""
    return dataclasses.replace(HARVEST_TASKS, fan_out=fan_out_from_env("harvest-pair-batch", retries=IO_RETRIES,
                                                                       threads=cfg.threads, gpus=0))


def _train_surrogate_encoder(config: dict[str, Any], pairs: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Train (or find) the surrogate encoder on the harvested pairs and register it."""
    return run_surrogate(HarvestConfig.model_validate(config), pairs, run_id=run_id)


train_surrogate_encoder = step_task(_train_surrogate_encoder, "train-surrogate-encoder", retries=TRAIN_RETRIES)
