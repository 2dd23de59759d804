"""Prefect wrappers of PST's and DefSent's pieces: tasks and a subflow per PST step, no decisions.

The order of the pieces is the library's (:func:`defsentflow.training.pst.run_pst`,
:func:`defsentflow.training.defsent_run.run_defsent`); a flow hands these executors to it, so the
CLI's local mode and the Prefect flow run the same code and write the same catalog rows. Caching
and resume are the library's content keys (an artifact that exists is reused, a killed training
resumes from its checkpoint); the Prefect tasks add visibility, logs and retries (once, after a
delay, resuming the checkpoint: :mod:`tasks.retries`), not a second set of keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from prefect import flow

from defsentflow.compute import compute_from_env
from defsentflow.tasks.fanout import fan_out_from_env
from defsentflow.tasks.retries import TRAIN_RETRIES
from defsentflow.tasks.step import step_task
from defsentflow.training.candidate import train_candidate
from defsentflow.training.defsent_run import DefSentSteps
from defsentflow.training.entry_matrix import build_entry_matrix
from defsentflow.training.pst import PstSteps, run_step0

__all__ = ["DEFSENT_TASKS", "PST_TASKS", "pst_tasks"]


def _step_subflow(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """One PST step as a ``pst-step`` subflow; its only parameter is the step number (the step's
    inputs stay in process)."""
    number = 0 if fn is run_step0 else args[2].step

    @flow(name="pst-step", flow_run_name=f"pst-step-{number}", log_prints=True, validate_parameters=False,
          persist_result=False)
    def pst_step(step: int) -> Any:
        return fn(*args, **kwargs)

    return pst_step(number)


PST_TASKS = PstSteps(
    build_matrix=step_task(build_entry_matrix, "pst-entry-matrix", retries=TRAIN_RETRIES),
    step=_step_subflow,
)


def pst_tasks() -> PstSteps:
    """PST's executor for a flow: the tasks above, and the candidates fanned out to the command's
    Dask cluster (``compute:``) as ``pst-candidate`` tasks, or run in turn without one; every
    candidate at ``compute.threads_per_candidate`` torch threads either way."""
    return dataclasses.replace(PST_TASKS, fan_out=fan_out_from_env("pst-candidate"),
                               threads=compute_from_env().threads_per_candidate)

DEFSENT_TASKS = DefSentSteps(
    build_matrix=step_task(build_entry_matrix, "defsent-entry-matrix", retries=TRAIN_RETRIES),
    train=step_task(train_candidate, "train-defsent", retries=TRAIN_RETRIES),
)
