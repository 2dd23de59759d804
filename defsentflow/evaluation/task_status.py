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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from defsentflow.eval_tasks import DICTIONARY_TASKS
from defsentflow.evaluation.sts_data import SICK_FILES, TASKS, available_tasks, sick_root, task_files
from defsentflow.storage import Catalog

__all__ = ["TaskStatus", "record_run_tasks", "runnable_tasks", "task_statuses"]

log = logging.getLogger(__name__)

Status = Literal["evaluated", "fallback", "skipped"]


@dataclass(frozen=True)
class TaskStatus:
    """One requested task: ``evaluated_as`` is the task name its figures are filed under."""

    task: str
    status: Status
    reason: str | None = None
    evaluated_as: str | None = None


def task_statuses(tasks: Sequence[str], data_dir: str | os.PathLike | None) -> list[TaskStatus]:
    """The status of each requested task (in the order given, duplicates dropped) for ``data_dir``."""
    present = set(available_tasks(data_dir)) if data_dir else set()
    out = []
    for task in dict.fromkeys(tasks):
        if task in DICTIONARY_TASKS:
            out.append(TaskStatus(task, "evaluated", None, task))
        elif task not in TASKS:
            out.append(TaskStatus(task, "skipped", f"unknown task; valid: {', '.join((*TASKS, *DICTIONARY_TASKS))}"))
        elif not data_dir:
            out.append(TaskStatus(task, "skipped", "no evaluation data folder (eval.data_dir) was found"))
        elif task in present:
            out.append(TaskStatus(task, "evaluated", None, task))
        elif task == "sickr" and "sickr-trial" in present:
            test = sick_root(data_dir) / SICK_FILES["test"]
            out.append(TaskStatus(task, "fallback", f"SICK test file {test.name} is missing: evaluated on the "
                                                    "labelled trial split (reported as sickr-trial)", "sickr-trial"))
        else:
            missing = [p for p in task_files(data_dir, task) if not p.is_file()]
            where = Path(data_dir).name or str(data_dir)
            name = missing[0].name if missing else "its files"
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            out.append(TaskStatus(task, "skipped", f"data file {name}{more} not found under {where}"))
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
