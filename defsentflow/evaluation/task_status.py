"""What became of each requested evaluation task: evaluated, fallback or skipped, with the reason.

No task is dropped silently. ``sickr`` without the SICK test file falls back to the labelled
trial split (reported as ``sickr-trial``, as :func:`~defsentflow.evaluation.sts_data.load_task`
does with ``sick_split="auto"``); a task whose files are missing, or whose name the evaluation
does not know, is skipped with its reason. The pipeline writes one ``run_tasks`` row per
requested task (``sql/096_run_tasks.sql``) and logs each.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import asdict

from defsentflow.eval_tasks import TASKS
from defsentflow.evaluation.kinds import kind_of
from defsentflow.evaluation.kinds.status import TaskStatus
from defsentflow.storage import Catalog

__all__ = ["TaskStatus", "record_run_tasks", "runnable_tasks", "task_statuses"]

log = logging.getLogger(__name__)

def task_statuses(tasks: Sequence[str], data_dir: str | os.PathLike | None) -> list[TaskStatus]:
    """The status of each requested task (in the order given, duplicates dropped) for ``data_dir``:
    its kind's answer (:meth:`~defsentflow.evaluation.kinds.TaskKind.available`)."""
    out = []
    for task in dict.fromkeys(tasks):
        kind = kind_of(task)
        if kind is None:
            out.append(TaskStatus(task, "skipped", f"unknown task; valid: {', '.join(TASKS)}"))
        else:
            out.append(kind.available(task, str(data_dir) if data_dir else None))
    return out


def runnable_tasks(statuses: Sequence[TaskStatus]) -> list[str]:
    """The requested names to hand to the evaluation: evaluated and fallback tasks."""
    return [s.task for s in statuses if s.status != "skipped"]


def record_run_tasks(run_id: str, statuses: Sequence[TaskStatus], *, root: str | os.PathLike | None = None) -> None:
    """Replace the run's ``run_tasks`` rows (one transaction) and log one line per task."""
    with Catalog(root).transaction() as con:
        con.execute("DELETE FROM run_tasks WHERE run_id = ?", [run_id])
        for s in statuses:
            con.execute("INSERT INTO run_tasks (run_id, task, status, reason, evaluated_as) VALUES (?, ?, ?, ?, ?)",
                        [run_id, s.task, s.status, s.reason, s.evaluated_as])
    for s in statuses:
        row = asdict(s)
        log.info("task %s: %s%s", row["task"], row["status"], f" ({row['reason']})" if row["reason"] else "")
