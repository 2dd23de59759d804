"""Prefect tasks for the contextual pair harvest and the surrogate: thin calls into defsentflow.scoring.

Every task takes the validated config as a dict plus small references (keys and paths) and
returns one. The library caches by content itself (scorer, index and pairs artifacts; a batch
whose Parquet part exists is skipped), so the tasks carry no Prefect cache of their own; a
re-run finds the work done and returns at once. That makes retries safe: I/O tasks and harvest
batches retry after a delay (:mod:`tasks.retries`), the surrogate once, resuming its checkpoint.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.retries import IO_RETRIES, TRAIN_RETRIES


def _cfg(config: dict[str, Any]):
    from defsentflow.scoring.config import HarvestConfig

    return HarvestConfig.model_validate(config)


@task(name="harvest-prepare-corpus", cache_policy=NO_CACHE, **IO_RETRIES)
def prepare_corpus(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Ingest (or find) the corpus, the optional extra sentences and the pairs file (``pairs.source: file``)."""
    from defsentflow.scoring.stages import prepare_corpus as corpus, prepare_extras, prepare_pair_file

    cfg = _cfg(config)
    return {"corpus": corpus(cfg, run_id), "extras": prepare_extras(cfg), "pair_file": prepare_pair_file(cfg)}


@task(name="train-context-scorer", cache_policy=NO_CACHE)
def train_context_scorer(config: dict[str, Any], inputs: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Encode the sentences (cached) and train the discriminative context scorer (cached artifact)."""
    from defsentflow.scoring.stages import prepare_scorer

    return prepare_scorer(_cfg(config), inputs["corpus"], inputs["extras"], run_id)


@task(name="build-chunk-index", cache_policy=NO_CACHE)
def build_chunk_index(config: dict[str, Any], inputs: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """The retrieval index over the corpus's chunks (cached artifact)."""
    from defsentflow.scoring.stages import prepare_index

    return prepare_index(_cfg(config), inputs["corpus"], run_id)


@task(name="plan-pair-harvest", cache_policy=NO_CACHE)
def plan_pair_harvest(config: dict[str, Any], refs: dict[str, Any]) -> dict[str, Any]:
    """The harvest's key, directory and batches of seed sentences."""
    from defsentflow.scoring.stages import plan_harvest

    return plan_harvest(_cfg(config), refs)


@task(name="harvest-pair-batch", cache_policy=NO_CACHE, **IO_RETRIES)
def harvest_pair_batch(config: dict[str, Any], refs: dict[str, Any], plan: dict[str, Any],
                       batch: dict[str, Any]) -> dict[str, Any]:
    """One batch of seeds -> labelled pairs (one Parquet part; skipped when the part exists)."""
    from defsentflow.scoring.stages import run_batch

    return run_batch(_cfg(config), refs, plan, batch)


@task(name="finalize-pair-harvest", cache_policy=NO_CACHE, **IO_RETRIES)
def finalize_pair_harvest(config: dict[str, Any], refs: dict[str, Any], plan: dict[str, Any],
                          parts: list[dict[str, Any]], run_id: str | None = None) -> dict[str, Any]:
    """Concatenate the parts, register the pairs artifact and its label statistics."""
    from defsentflow.scoring.stages import finalize_harvest

    result = finalize_harvest(_cfg(config), refs, plan, run_id)
    return {**result, "batches_computed": sum(bool(p["computed"]) for p in parts)}


@task(name="train-surrogate-encoder", cache_policy=NO_CACHE, **TRAIN_RETRIES)
def train_surrogate_encoder(config: dict[str, Any], pairs: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Train (or find) the surrogate encoder on the harvested pairs and register it."""
    from defsentflow.training.surrogate import run_surrogate

    return run_surrogate(_cfg(config), pairs, run_id=run_id)
