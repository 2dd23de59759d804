"""The runnable evaluation tasks: each one declares its metadata, its inputs and ``run``.

As sentence-transformers' evaluators and mteb's tasks, each evaluator reads the task registry's
metadata (:data:`defsentflow.eval_tasks.TASKS`: name, splits, main metric, protocols, candidate
sets), says which of a config's tasks it runs, hashes the inputs they read, and turns a model into
metric rows whose task names carry every setting that changed them. The suite
(:func:`defsentflow.evaluation.suite.run_evaluation`) loops over :data:`EVALUATORS`; adding a task
is a registry row and, for a new kind, one evaluator here.

* :class:`StsEvaluator`: every requested STS task in one encoding pass;
* :class:`RevdictEvaluator`: the reverse dictionary, every (split, protocol) sharing one encoding;
* :class:`WordpredEvaluator`: word prediction through the model's frozen head.

Example:
    >>> cfg = EvalConfig(tasks="stsb-dev,wordpred", dictionary="sample")
    >>> [e.name for e in EVALUATORS if e.tasks(cfg)]
    ['sts', 'wordpred']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from defsentflow.dictionary.store import resolve_dictionary
from defsentflow.eval_tasks import STS_TASKS, TASKS, TaskMetadata
from defsentflow.evaluation import revdict, wordpred
from defsentflow.evaluation.config import EvalConfig
from defsentflow.evaluation.sts import evaluate_sts
from defsentflow.evaluation.sts_data import task_files
from defsentflow.storage import hash_file

__all__ = ["EVALUATORS", "EvalTask", "RevdictEvaluator", "StsEvaluator", "WordpredEvaluator", "dictionary_runs"]


class EvalTask(Protocol):
    """What the suite asks of an evaluator."""

    name: str

    def tasks(self, config: EvalConfig) -> tuple[str, ...]:
        """The config's requested tasks this evaluator runs (none: it is skipped)."""

    def inputs(self, config: EvalConfig) -> list[str]:
        """One string per input it reads, naming its content (a file's hash, a dataset's key)."""

    def run(self, model: str, config: EvalConfig, pooling: str, *, table: pa.Table | None = None,
            root: str | None = None) -> list[dict[str, Any]]:
        """Metric rows ``{task, setting, metric, value, n, n_excluded, pooling}``. A dictionary task
        reads ``table`` when given (a worker reads the dictionary folder, not the catalog), else
        ``config.dictionary`` from the catalog of ``root``."""


@dataclass(frozen=True)
class StsEvaluator:
    """The STS tasks: Spearman x 100 of cosine similarity vs gold, one encoding pass for them all."""

    name: str = "sts"

    def tasks(self, config: EvalConfig) -> tuple[str, ...]:
        return tuple(t for t in config.tasks if t in STS_TASKS)

    def inputs(self, config: EvalConfig) -> list[str]:
        # a missing file is hashed as missing, so adding a held-back split later changes the hash
        return [f"{task}:{f.name}:{hash_file(f) if f.is_file() else 'missing'}" for task in self.tasks(config)
                for f in task_files(config.resolved_data_dir(), task, sick_split=config.sick_split)]

    def run(self, model: str, config: EvalConfig, pooling: str, *, table: pa.Table | None = None,
            root: str | None = None) -> list[dict[str, Any]]:
        return evaluate_sts(model, self.tasks(config), data_dir=config.resolved_data_dir(), pooling=pooling,
                            batch_size=config.batch_size, autocast=config.autocast, max_length=config.max_length,
                            sick_split=config.sick_split, per_subset=config.per_subset, cache=config.cache,
                            device=config.device, pearson=config.pearson)


def dictionary_runs(meta: TaskMetadata, config: EvalConfig) -> list[tuple[str, str]]:
    """The ``(split, protocol)`` pairs a dictionary task runs: the config's splits x its protocols
    that the task serves (:attr:`TaskMetadata.protocols`)."""
    return [(split, protocol) for split in config.revdict_splits for protocol in config.revdict_protocols
            if split in meta.splits and protocol in meta.protocols]


@dataclass(frozen=True)
class _DictionaryTask:
    name: str

    @property
    def metadata(self) -> TaskMetadata:
        return TASKS[self.name]

    def tasks(self, config: EvalConfig) -> tuple[str, ...]:
        return (self.name,) if self.name in config.tasks and dictionary_runs(self.metadata, config) else ()

    def inputs(self, config: EvalConfig) -> list[str]:
        try:  # the dataset's artifact key names its content: a re-ingest with other definitions is another key
            key = resolve_dictionary(str(config.dictionary))[0]
        except KeyError:
            key = "missing"
        return [f"{self.name}:{config.dictionary}:{key}"]


@dataclass(frozen=True)
class RevdictEvaluator(_DictionaryTask):
    """The reverse dictionary (:mod:`defsentflow.evaluation.revdict`)."""

    name: str = "revdict"

    def run(self, model: str, config: EvalConfig, pooling: str, *, table: pa.Table | None = None,
            root: str | None = None) -> list[dict[str, Any]]:
        # looked up on its module at call time, so tests can replace it there
        results = revdict.evaluate_revdict_runs(
            model, config.dictionary if table is None else table, root=root, runs=dictionary_runs(self.metadata, config), pooling=pooling,
            candidates=config.revdict_candidates, modes=config.revdict_modes, max_queries=config.revdict_max_queries,
            batch_size=config.batch_size, max_length=config.max_length, autocast=config.autocast,
            device=config.device, cache=config.cache, ties=config.ties)
        return [r for res in results for r in res["rows"]]


@dataclass(frozen=True)
class WordpredEvaluator(_DictionaryTask):
    """Word prediction through the model's frozen head (:mod:`defsentflow.evaluation.wordpred`)."""

    name: str = "wordpred"

    def run(self, model: str, config: EvalConfig, pooling: str, *, table: pa.Table | None = None,
            root: str | None = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for split, protocol in dictionary_runs(self.metadata, config):
            rows += wordpred.evaluate_wordpred(
                model, config.dictionary if table is None else table, root=root, split=split, protocol=protocol, pooling=pooling,
                max_queries=config.revdict_max_queries, batch_size=config.batch_size, max_length=config.max_length,
                autocast=config.autocast, device=config.device, ties=config.ties)["rows"]
        return rows


EVALUATORS: tuple[EvalTask, ...] = (StsEvaluator(), RevdictEvaluator(), WordpredEvaluator())
