"""The ``train-surrogate`` flow: harvested pairs -> a Siamese encoder whose cosine regresses their labels."""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.flows.harvest_pairs import run_harvest_flow
from defsentflow.scoring.config import HarvestConfig
from defsentflow.tasks.harvest import train_surrogate_encoder

__all__ = ["train_surrogate_flow"]


@flow(name="train-surrogate", log_prints=True)
def train_surrogate_flow(config: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """Make sure the config's harvest exists (a sub-flow; cached stages return at once), then train."""
    config = HarvestConfig.model_validate(config).model_dump(mode="json")
    pairs = run_harvest_flow(config, run_id=run_id)
    result = train_surrogate_encoder(config, {"key": pairs["key"], "path": pairs["path"]}, run_id)
    print(f"surrogate {result['model_id']}: {result['path']}")
    return result
