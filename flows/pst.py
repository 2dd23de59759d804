"""The ``pst`` flow: Progressive Separate Training, one ``pst-step`` subflow per step.

The sequence is the library's :func:`defsentflow.training.pst.run_pst`; this flow only hands it
the pieces wrapped as Prefect tasks (``tasks/training.py``); a step's candidates go to the command's Dask
cluster when it has one (``compute:``, ``--local-workers``, ``--dask-address``). A second run with the same inputs
reuses every entry matrix, trained model and score by its content key.
"""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow

from defsentflow.compute import compute_from_env
from defsentflow.report.step_log import log_step
from defsentflow.tasks.cluster import compute_cluster
from defsentflow.tasks.training import pst_tasks
from defsentflow.training.pst import run_pst
from defsentflow.training.pst_config import PstSection


@flow(name="pst", log_prints=True)
def pst_flow(section: dict[str, Any], run_id: str | None = None) -> Any:
    """Run PST for a ``pst:`` config section (a dict validated as ``PstSection``); returns a ``PstResult``.
    Its candidates run on the cluster of the command that called it, else on ``DEFSENTFLOW_DASK_ADDRESS``'s;
    each step's figure and its candidates' losses go to the run's log."""
    with compute_cluster(compute_from_env()):
        return run_pst(PstSection.model_validate(section), run_id=run_id or f"pst-{uuid.uuid4().hex[:8]}",
                       steps=pst_tasks(), on_step=log_step)
