"""The transfer kind: SentEval's probe on frozen sentence vectors (:mod:`defsentflow.evaluation.transfer`).

Each task's sentences are encoded once (every split, duplicates removed, and once for all of a
protocol's probe seeds) with the model at the evaluation's pooling; the probe runs the task's
validation scheme. A figure is filed under the task's name when it is a test figure (a test split,
or a train-only task's outer folds) and under ``<task>-dev`` when it is a dev one (the split or
inner folds that chose C; SICK-E's trial split while its test file is held back). A protocol run
over several probe seeds (``bbc-topics``) gives the mean, and the sample sd as ``<metric>_sd``.

``--tasks transfer`` (:data:`~defsentflow.eval_tasks.TRANSFER_GROUP`) asks for every transfer task
whose files are present; a task named on its own whose files are missing stops the evaluation with
one line naming them and every folder looked in.

Example:
    >>> KIND.tasks(EvalConfig(tasks="transfer", data_dir="../shared/data"))
    ('sick-e', 'sickr-sup', 'stsb-sup', 'bbc-topics')
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from defsentflow.encoders import encode_texts, load_encoder
from defsentflow.encoders.finite import require_finite
from defsentflow.eval_tasks import TRANSFER_GROUP, VARIANT_SEP, FigureSettings, with_variant
from defsentflow.evaluation import transfer_data
from defsentflow.evaluation.kinds.status import TaskStatus
from defsentflow.evaluation.transfer import run_task_seeds, seed_stats
from defsentflow.storage import hash_path

__all__ = ["KIND", "SEEDS", "TransferKind"]

SEEDS: dict[str, tuple[int, ...]] = {"bbc-topics": (1111, 1112, 1113)}
"""The probe seeds of a protocol run more than once (the folds move with the seed); the others run
SentEval's one seed (``TransferTask.seed``)."""


def _seeds(task: str) -> tuple[int, ...]:
    return SEEDS.get(task, (transfer_data.TASKS[task].seed,))


def _rows(task: str, results: list, tokens: tuple[str, ...], pooling: str) -> list[dict[str, Any]]:
    out = []
    for key, (mean, sd) in seed_stats(results).items():
        split, metric = key.split("_", 1)
        name = with_variant(task if split == "test" else f"{task}-dev", tokens)
        n = results[0].n.get(split, results[0].n["train"])  # a fold figure: the records the folds are of
        out.append({"task": name, "setting": "all", "metric": metric, "value": mean, "n": n, "pooling": pooling})
        if len(results) > 1:
            out.append({"task": name, "setting": "all", "metric": f"{metric}_sd", "value": sd, "n": len(results),
                        "pooling": pooling})
    return out


@dataclass(frozen=True)
class TransferKind:
    name: str = "transfer"
    reads_data_dir: bool = True
    extra_poolings: bool = False
    uses_head: bool = False

    def serves(self, meta: Any) -> bool:
        return meta.kind == "transfer"

    def tasks(self, config: Any) -> tuple[str, ...]:
        asked = set(config.tasks)
        if TRANSFER_GROUP in asked:
            asked |= set(transfer_data.available_tasks(config.resolved_data_dir()))
        return tuple(t for t in transfer_data.TASKS if t in asked)

    def available(self, task: str, data_dir: str | None) -> TaskStatus:
        if not data_dir:
            return TaskStatus(task, "skipped", "no evaluation data folder (eval.data_dir) was found")
        if task == TRANSFER_GROUP:
            found = transfer_data.available_tasks(data_dir)
            return (TaskStatus(task, "evaluated", None, ",".join(found)) if found else
                    TaskStatus(task, "skipped", f"no transfer task's files are under {data_dir}"))
        try:
            transfer_data.locate(transfer_data.TASKS[task], data_dir)
        except transfer_data.TransferDataMissing as exc:
            return TaskStatus(task, "skipped", str(exc))
        return TaskStatus(task, "evaluated", None, task)

    def inputs(self, task: str, config: Any) -> str:
        try:  # a held-back test split that appears later is another file set, so another hash
            found = transfer_data.locate(transfer_data.TASKS[task], config.resolved_data_dir())
        except (KeyError, transfer_data.TransferDataMissing):
            return f"{task}:missing"
        return ",".join(f"{task}:{split}:{path.name}:{hash_path(path)}" for split, path in sorted(found.items()))

    def settings(self, task: str, config: Any) -> dict[str, Any]:
        spec = transfer_data.TASKS.get(task)
        protocol = [replace(spec, seed=s).protocol_hash() for s in _seeds(task)] if spec else []
        return {"protocol": protocol, "max_length": config.max_length, "autocast": config.autocast}

    def owner(self, row_task: str, tasks: tuple[str, ...]) -> str:
        base = row_task.split(VARIANT_SEP)[0]
        return base.removesuffix("-dev") if base not in tasks else base

    def run(self, model: str, config: Any, tasks: tuple[str, ...], pooling: str, *, table: pa.Table | None = None,
            root: str | None = None, head: Any = None) -> list[dict[str, Any]]:
        data_dir = config.resolved_data_dir()
        for task in tasks:  # every task's files before the model loads: a missing one is one line, at once
            transfer_data.locate(transfer_data.TASKS[task], data_dir)
        enc = load_encoder(model, device=config.device)

        def encode(texts: list[str]) -> np.ndarray:
            vecs = encode_texts(enc, texts, pooling=pooling, batch_size=config.batch_size, max_length=config.max_length,
                                autocast=config.autocast, cache=config.cache, desc="transfer")
            require_finite(vecs, model=str(model), what="sentence vectors")
            return vecs

        tokens = FigureSettings(max_length=config.max_length, autocast=config.autocast).tokens("sts")
        return [row for task in tasks
                for row in _rows(task, run_task_seeds(task, data_dir, encode, _seeds(task)), tokens, pooling)]


KIND = TransferKind()
