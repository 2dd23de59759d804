"""The STS kind: Spearman x 100 of cosine similarity against gold, every requested STS task in one
encoding pass (:func:`defsentflow.evaluation.sts.evaluate_sts`); its files lie in the data folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from defsentflow.eval_tasks import STS_TASKS, VARIANT_SEP
from defsentflow.evaluation.kinds.status import TaskStatus
from defsentflow.evaluation.sts import evaluate_sts
from defsentflow.evaluation.sts_data import SICK_FILES, available_tasks, sick_root, task_files
from defsentflow.storage import hash_file

__all__ = ["KIND", "StsKind"]


@dataclass(frozen=True)
class StsKind:
    name: str = "sts"
    reads_data_dir: bool = True
    extra_poolings: bool = True
    uses_head: bool = False

    def serves(self, meta: Any) -> bool:
        return meta.kind == "sts"

    def tasks(self, config: Any) -> tuple[str, ...]:
        return tuple(t for t in config.tasks if t in STS_TASKS)

    def available(self, task: str, data_dir: str | None) -> TaskStatus:
        if not data_dir:
            return TaskStatus(task, "skipped", "no evaluation data folder (eval.data_dir) was found")
        present = set(available_tasks(data_dir))
        if task in present:
            return TaskStatus(task, "evaluated", None, task)
        if task == "sickr" and "sickr-trial" in present:
            test = sick_root(data_dir) / SICK_FILES["test"]
            return TaskStatus(task, "fallback", f"SICK test file {test.name} is missing: evaluated on the labelled "
                                                "trial split (reported as sickr-trial)", "sickr-trial")
        missing = [p for p in task_files(data_dir, task) if not p.is_file()]
        where = Path(data_dir).name or str(data_dir)
        name = missing[0].name if missing else "its files"
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        return TaskStatus(task, "skipped", f"data file {name}{more} not found under {where}")

    def inputs(self, task: str, config: Any) -> str:
        # a missing file is hashed as missing, so adding a held-back split later changes the hash
        return ",".join(f"{task}:{f.name}:{hash_file(f) if f.is_file() else 'missing'}"
                        for f in task_files(config.resolved_data_dir(), task, sick_split=config.sick_split))

    def settings(self, task: str, config: Any) -> dict[str, Any]:
        return {"max_length": config.max_length, "autocast": config.autocast, "sick_split": config.sick_split,
                "per_subset": config.per_subset, "pearson": config.pearson}

    def owner(self, row_task: str, tasks: tuple[str, ...]) -> str:
        base = row_task.split(VARIANT_SEP)[0].split("/")[0]  # sts12+len64, sts12/MSRpar (a subset's row)
        return "sickr" if base not in tasks and base.startswith("sickr") else base

    def run(self, model: str, config: Any, tasks: tuple[str, ...], pooling: str, *, table: pa.Table | None = None,
            root: str | None = None, head: Any = None) -> list[dict[str, Any]]:
        return evaluate_sts(model, tasks, data_dir=config.resolved_data_dir(), pooling=pooling,
                            batch_size=config.batch_size, autocast=config.autocast, max_length=config.max_length,
                            sick_split=config.sick_split, per_subset=config.per_subset, cache=config.cache,
                            device=config.device, pearson=config.pearson)


KIND = StsKind()
