"""The ``train-defsent`` flow: one DefSent or DefSent+ training run, cached by its inputs.

The sequence is the library's :func:`defsentflow.training.defsent_run.run_defsent`, given the
pieces as Prefect tasks.
"""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow

from defsentflow.tasks.training import DEFSENT_TASKS
from defsentflow.training.defsent_run import run_defsent
from defsentflow.training.pst_config import DefSentSection


@flow(name="train-defsent", log_prints=True)
def train_defsent_flow(section: dict[str, Any], run_id: str | None = None) -> Any:
    """Train from a ``defsent:`` config section (a dict validated as ``DefSentSection``)."""
    s = DefSentSection.model_validate(section)
    return run_defsent(s, run_id=run_id or f"{s.method.replace('_', '-')}-{uuid.uuid4().hex[:8]}",
                       steps=DEFSENT_TASKS)
