"""The ``pst`` flow: Progressive Separate Training, one ``pst-step`` subflow per step.

The flow only sequences tasks (``tasks/training.py``); every decision (what a step trains, which
candidate wins, when ``steps: auto`` stops) is a library function in ``defsentflow.training.pst``.
A second run with the same inputs is a cache hit for every entry-matrix, training and scoring task.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from prefect import flow

from tasks.training import (
    build_entry_matrix,
    finish_pst,
    plan_pst_step,
    pst_should_stop,
    record_pst_step,
    resolve_pst_inputs,
    score_candidate,
    score_untrained,
    train_candidate,
)


@flow(name="pst-step", log_prints=True)
def pst_step_flow(section: dict[str, Any], inputs: dict[str, Any], step: int, previous: dict[str, Any] | None,
                  run_id: str) -> dict[str, Any]:
    """Entry matrices with the step's encoder, then train and score every (grid point, seed)."""
    t0 = time.perf_counter()
    plan = plan_pst_step(section, step, previous)
    matrices = {enc: build_entry_matrix(section, inputs, plan, enc)
                for enc in dict.fromkeys(g["entry_encoding"] for g in plan["grid"])}
    candidates = []
    for grid in plan["grid"]:
        for seed in plan["seeds"]:
            trained = train_candidate(section, inputs, plan, grid, seed, matrices[grid["entry_encoding"]])
            candidates.append(score_candidate(section, inputs, trained))
    return record_pst_step(run_id, plan, candidates, list(matrices.values()), time.perf_counter() - t0)


@flow(name="pst", log_prints=True)
def pst_flow(section: dict[str, Any], run_id: str | None = None) -> Any:
    """Run PST for a ``pst:`` config section (a dict validated as ``PstSection``); returns a ``PstResult``."""
    from defsentflow.training.pst_config import PstSection

    section = PstSection.model_validate(section).model_dump(mode="json")
    run_id = run_id or f"pst-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    inputs = resolve_pst_inputs(section, run_id)
    step0 = score_untrained(section, inputs)
    history = [record_pst_step(run_id, {"step": 0}, step0["candidates"], [], step0["seconds"])]
    total = section["max_steps"] if section["steps"] == "auto" else section["steps"]
    for step in range(1, total + 1):
        history.append(pst_step_flow(section, inputs, step, history[-1] if step > 1 else None, run_id))
        if pst_should_stop(section, history):
            break
    return finish_pst(section, run_id, history, inputs, time.perf_counter() - t0)
