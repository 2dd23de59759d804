"""The ``pretrain`` flow: corpora (+ usage examples) -> a raw BERT encoder pretrained by masked-LM.

The sequence is the library's :func:`defsentflow.training.pretrain.run_pretrain`; this flow only
hands it the pieces wrapped as Prefect tasks (``tasks/pretrain.py``). A second run with the same
inputs finds the corpora and the model by their content keys.
"""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow

from defsentflow.tasks.pretrain import PRETRAIN_TASKS
from defsentflow.training.pretrain import run_pretrain
from defsentflow.training.pretrain_config import PretrainSection


@flow(name="pretrain", log_prints=True)
def pretrain_flow(section: dict[str, Any], run_id: str | None = None, stop_after_steps: int | None = None) -> Any:
    """Pretrain from a ``pretrain:`` config section (a dict validated as ``PretrainSection``);
    returns a ``PretrainOutcome``. ``stop_after_steps``: leave a checkpoint after that many steps."""
    return run_pretrain(PretrainSection.model_validate(section), run_id=run_id or f"pretrain-{uuid.uuid4().hex[:8]}",
                        stop_after_steps=stop_after_steps, steps=PRETRAIN_TASKS)
