"""What became of one requested evaluation task: evaluated, fallback or skipped, with the reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Status", "TaskStatus"]

Status = Literal["evaluated", "fallback", "skipped"]


@dataclass(frozen=True)
class TaskStatus:
    """One requested task: ``evaluated_as`` is the task name its figures are filed under."""

    task: str
    status: Status
    reason: str | None = None
    evaluated_as: str | None = None
