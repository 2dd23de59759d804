"""The evaluation suite: STS tasks and the reverse dictionary for one model, recorded in the catalog.

This is what ``defsentflow eval`` and the ``evaluate`` flow run. STS tasks share one encoding
pass (:func:`~defsentflow.evaluation.sts.evaluate_sts`); ``revdict`` calls
:func:`defsentflow.evaluation.revdict.evaluate_revdict` and needs a dictionary dataset.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, field_validator

from defsentflow.evaluation.sts import average_row, evaluate_sts
from defsentflow.evaluation.sts_data import TASKS as STS_TASKS
from defsentflow.evaluation.sts_data import SickSplit

__all__ = ["EVAL_TASKS", "EvalConfig", "EvalResult", "EvaluateSection", "default_data_dir", "default_pooling",
           "evaluation_inputs_hash", "record_evaluation", "resolve_model", "run_evaluation", "validate_eval_tasks"]

EVAL_TASKS: tuple[str, ...] = (*STS_TASKS, "revdict", "wordpred")
DICTIONARY_TASKS: tuple[str, ...] = ("revdict", "wordpred")


def validate_eval_tasks(tasks: str | Sequence[str]) -> tuple[str, ...]:
    """Split a comma list and reject unknown task names, listing the valid ones."""
    names = [t.strip() for t in (tasks.split(",") if isinstance(tasks, str) else tasks) if t.strip()]
    if not names:
        raise ValueError(f"no tasks given; valid: {', '.join(EVAL_TASKS)}")
    bad = [t for t in names if t not in EVAL_TASKS]
    if bad:
        raise ValueError(f"unknown task(s) {bad}; valid: {', '.join(EVAL_TASKS)}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and how.

    Example:
        >>> EvalConfig(tasks=("sts12", "stsb-dev"), data_dir="../shared/data", pooling="mean")
    """

    tasks: tuple[str, ...]
    data_dir: str = "../shared/data"
    pooling: str | None = None  # None: the model's training pooling (defsentflow.json), else mean
    batch_size: int = 128
    max_length: int = 256
    autocast: str = "none"
    sick_split: SickSplit = "auto"
    per_subset: bool = False
    dictionary: str | None = None  # revdict: dictionary dataset name or artifact key
    revdict_splits: tuple[str, ...] = ("dev", "test")  # dev figures are for selection, test for reporting
    revdict_protocols: tuple[str, ...] = ("unseen",)  # and/or "papers" (see evaluation.revdict)
    revdict_max_queries: int | None = 2000
    revdict_candidates: str = "all"  # all entries of the dataset, or only those of each split
    revdict_modes: tuple[str, ...] = ("head", "cosine")  # and/or "hybrid" (see evaluation.revdict)
    device: str = "auto"
    cache: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", validate_eval_tasks(self.tasks))
        needs = [t for t in DICTIONARY_TASKS if t in self.tasks]
        if needs and not self.dictionary:
            raise ValueError(f"task {needs[0]!r} needs a dictionary dataset (--dictionary NAME)")
        object.__setattr__(self, "revdict_modes", tuple(self.revdict_modes))
        object.__setattr__(self, "revdict_splits", tuple(self.revdict_splits))
        object.__setattr__(self, "revdict_protocols", tuple(self.revdict_protocols))
        bad = [x for x in self.revdict_splits if x not in ("train", "dev", "test")]
        if bad or not self.revdict_splits:
            raise ValueError(f"revdict_splits must be a non-empty subset of train, dev, test; got {list(self.revdict_splits)}")
        bad = [x for x in self.revdict_protocols if x not in ("unseen", "papers")]
        if bad or not self.revdict_protocols:
            raise ValueError(f"revdict_protocols must be a non-empty subset of unseen, papers; got {list(self.revdict_protocols)}")
        bad = [m for m in self.revdict_modes if m not in ("head", "cosine", "hybrid")]
        if bad or not self.revdict_modes:
            raise ValueError(f"revdict_modes must be a non-empty subset of head, cosine, hybrid; got {list(self.revdict_modes)}")
        if self.revdict_candidates not in ("all", "split"):
            raise ValueError(f"revdict_candidates must be 'all' or 'split', got {self.revdict_candidates!r}")


def default_data_dir() -> Path:
    """``../shared/data`` beside the working directory, else beside the source checkout."""
    from defsentflow.storage import repo_root

    here = Path.cwd().parent / "shared" / "data"
    return here if here.is_dir() else repo_root().parent / "shared" / "data"


class EvaluateSection(BaseModel):
    """The boundary form of an evaluation (flow parameters, an ``evaluate:`` config section).

    Unknown keys are errors that name the key; choices are checked here, not deep in a loop.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), strict=True)

    model: str
    model_id: str | None = None
    tasks: list[str] = ["sts12", "sts13", "sts14", "sts15", "sts16", "stsb-dev", "sickr"]
    data_dir: str | None = None  # None: ../shared/data (see default_data_dir)
    pooling: Literal["cls", "mean", "max", "prompt", "sbert_wk"] | None = None
    batch_size: int = 128
    max_length: int = 256
    autocast: Literal["none", "bf16", "fp16"] = "none"
    sick_split: Literal["auto", "test", "trial", "train"] = "auto"
    per_subset: bool = False
    dictionary: str | None = None
    revdict_splits: list[Literal["train", "dev", "test"]] = ["dev", "test"]
    revdict_protocols: list[Literal["unseen", "papers"]] = ["unseen"]
    revdict_max_queries: int | None = 2000
    revdict_candidates: Literal["all", "split"] = "all"
    revdict_modes: list[Literal["head", "cosine", "hybrid"]] = ["head", "cosine"]
    device: str = "auto"
    cache: bool = False

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, v: Any) -> list[str]:
        return list(validate_eval_tasks(v))

    def to_config(self) -> EvalConfig:
        d = self.model_dump(exclude={"model", "model_id"})
        d["tasks"] = tuple(d["tasks"])
        d["revdict_modes"] = tuple(d["revdict_modes"])
        d["revdict_splits"] = tuple(d["revdict_splits"])
        d["revdict_protocols"] = tuple(d["revdict_protocols"])
        d["data_dir"] = d["data_dir"] or str(default_data_dir())
        return EvalConfig(**d)


@dataclass(frozen=True)
class EvalResult:
    """Metric rows (``task, setting, metric, value, n, pooling``) and what produced them."""

    model: str
    pooling: str
    rows: tuple[dict[str, Any], ...]
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def average(self) -> dict[str, Any] | None:
        return average_row(self.rows)


def default_pooling(model: str | os.PathLike) -> str:
    """The pooling a model was trained with (its ``defsentflow.json``), else ``mean``."""
    from defsentflow.encoders.loading import resolve_model_path

    meta = Path(resolve_model_path(model)) / "defsentflow.json"
    if meta.is_file():
        try:
            return str(json.loads(meta.read_text()).get("pooling") or "mean")
        except ValueError:
            return "mean"
    return "mean"


def run_evaluation(model: str | os.PathLike, config: EvalConfig) -> EvalResult:
    """Evaluate ``model`` on ``config.tasks``; nothing is written (see :func:`record_evaluation`)."""
    from defsentflow.encoders import validate_pooling

    pooling = validate_pooling(config.pooling or default_pooling(model))
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    sts = [t for t in config.tasks if t not in DICTIONARY_TASKS]
    if sts:
        t0 = time.perf_counter()
        rows += evaluate_sts(str(model), sts, data_dir=config.data_dir, pooling=pooling, batch_size=config.batch_size,
                             autocast=config.autocast, max_length=config.max_length, sick_split=config.sick_split,
                             per_subset=config.per_subset, cache=config.cache, device=config.device)
        seconds["sts"] = time.perf_counter() - t0
    runs = [(split, protocol) for split in config.revdict_splits for protocol in config.revdict_protocols]
    if "revdict" in config.tasks:
        from defsentflow.evaluation.revdict import evaluate_revdict_runs

        t0 = time.perf_counter()
        for res in evaluate_revdict_runs(str(model), config.dictionary, runs=runs, pooling=pooling,
                                         candidates=config.revdict_candidates, modes=config.revdict_modes,
                                         max_queries=config.revdict_max_queries, batch_size=config.batch_size,
                                         autocast=config.autocast, device=config.device, cache=config.cache):
            rows += res["rows"]
        seconds["revdict"] = time.perf_counter() - t0
    if "wordpred" in config.tasks:
        from defsentflow.evaluation.wordpred import evaluate_wordpred

        t0 = time.perf_counter()
        for split, protocol in runs:
            res = evaluate_wordpred(str(model), config.dictionary, split=split, protocol=protocol,
                                    max_queries=config.revdict_max_queries, batch_size=config.batch_size,
                                    autocast=config.autocast, device=config.device)
            rows += res["rows"]
        seconds["wordpred"] = time.perf_counter() - t0
    return EvalResult(str(model), pooling, tuple(rows), seconds)


def evaluation_inputs_hash(config: EvalConfig) -> str:
    """Content hash of every evaluation file the config's STS tasks read, plus the revdict dictionary name.

    A missing file is hashed as missing, so adding a held-back split later changes the hash.
    """
    from defsentflow.evaluation.sts_data import task_files
    from defsentflow.storage import combine_hashes, hash_file

    parts = []
    for task in config.tasks:
        if task in DICTIONARY_TASKS:
            parts.append(f"{task}:{config.dictionary}:{','.join(config.revdict_splits)}:"
                         f"{','.join(config.revdict_protocols)}:{config.revdict_candidates}")
            continue
        for f in task_files(config.data_dir, task, sick_split=config.sick_split):
            parts.append(f"{task}:{f.name}:{hash_file(f) if f.is_file() else 'missing'}")
    return combine_hashes(parts)


def resolve_model(catalog: Any, model: str) -> tuple[str, str]:
    """``(model_id, path)``: a registered model by id or path, else the name as given."""
    from defsentflow.encoders.loading import resolve_model_path

    rows = catalog.query("SELECT model_id, path FROM models WHERE model_id = ?", [model])
    if rows:
        return rows[0]["model_id"], rows[0]["path"]
    path = resolve_model_path(model)
    if Path(path).exists():
        absolute = str(Path(path).resolve())
        # a properly registered id (with a method) before one that scores were merely filed under
        rows = catalog.query("SELECT model_id, path FROM models WHERE path = ? OR path = ? "
                             "ORDER BY method IS NULL, created_at", [path, absolute])
        if rows:
            return rows[0]["model_id"], rows[0]["path"]
    return model, path


def record_evaluation(catalog: Any, model_id: str, result: EvalResult, *, run_id: str | None = None) -> int:
    """Write the result's metric rows (replacing older values of the same keys); returns the count."""
    rows = [{k: r.get(k) for k in ("task", "setting", "metric", "value", "n", "n_excluded", "pooling")}
            for r in result.rows]
    catalog.record_metrics(model_id, rows, run_id=run_id)
    if Path(result.model).exists():
        # An id scores are filed under names a directory: the leaderboard then merges it with the
        # other ids of that directory (a baseline's base:<name> with PST's base-<hash>).
        catalog.execute("INSERT INTO models (model_id, path) VALUES (?, ?) ON CONFLICT (model_id) DO NOTHING",
                        [model_id, str(result.model)])
    return len(rows)
