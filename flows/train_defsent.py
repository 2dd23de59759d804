"""The ``train-defsent`` flow: one DefSent or DefSent+ training run, cached by its inputs."""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow

from tasks.training import finish_defsent, resolve_defsent_inputs, train_defsent


@flow(name="train-defsent", log_prints=True)
def train_defsent_flow(section: dict[str, Any], run_id: str | None = None) -> Any:
    """Train from a ``defsent:`` config section (a dict validated as ``DefSentSection``)."""
    from defsentflow.training.pst import DefSentResult
    from defsentflow.training.pst_config import DefSentSection

    section = DefSentSection.model_validate(section).model_dump(mode="json")
    run_id = run_id or f"{section['method'].replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    inputs = resolve_defsent_inputs(section, run_id)
    return DefSentResult.from_dict(finish_defsent(run_id, train_defsent(section, inputs)))
