"""What a PST step says in the run's log: its figure, each candidate's score and training losses.

The ``pst`` flow hands :func:`log_step` to the sequencer as its ``on_step``; the lines go to the
run's log file (``logs/RUN_ID.log``) and the step's headline line to the terminal too.

Example:
    >>> loss_summary([2.0, 1.5, 1.2, 1.1], points=3)
    '2.000 1.200 1.100 (4 steps; min 1.100)'
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from defsentflow.model import record_of

__all__ = ["log_step", "loss_summary", "step_lines"]

log = logging.getLogger("defsentflow.pst")


def loss_summary(losses: Sequence[float], points: int = 12) -> str:
    """``points`` losses evenly spaced from the first to the last optimizer step, with the count and minimum."""
    if not losses:
        return "no losses recorded"
    n, k = len(losses), min(points, len(losses))
    idx = sorted({round(i * (n - 1) / max(k - 1, 1)) for i in range(k)})
    return f"{' '.join(f'{losses[i]:.3f}' for i in idx)} ({n} steps; min {min(losses):.3f})"


def step_lines(step: Any) -> tuple[str, list[str]]:
    """``(headline, candidate lines)`` of a finished step (a ``StepResult``)."""
    how = "reused" if step.cached else f"{step.seconds:.1f} s"
    metric = step.best.metric or "score"
    figure = "" if step.figure is None else f"{step.figure:.4f}"
    headline = (f"PST step {step.step} ({how}): {metric} {figure} ({step.rule}), chosen {step.best.model_id}"
                + (f"; per combination {', '.join(f'{g} {v:.4f}' for g, v in step.group_means.items())}"
                   if len(step.group_means) > 1 else ""))
    lines = []
    for c in step.candidates:
        score = "-" if c.score is None else f"{c.score:.4f}"
        losses = record_of(c.model_dir).losses if c.step >= 1 else None
        lines.append(f"  step {c.step} {c.group} seed {c.seed}: {metric} {score}; {c.model_id}"
                     + (f"; loss {loss_summary(losses)}" if losses else ""))
    return headline, lines


def log_step(step: Any) -> None:
    """Log a finished step: the headline everywhere, the candidates' lines in the log file only."""
    headline, lines = step_lines(step)
    log.info(headline)
    for line in lines:
        log.info(line, extra={"terminal": False})
