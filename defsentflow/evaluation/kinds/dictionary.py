"""What the two dictionary kinds share: a dictionary dataset as input, the config's (split,
protocol) runs, no data folder (the kinds :mod:`.revdict` and :mod:`.wordpred` build on it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from defsentflow.dictionary.store import resolve_dictionary
from defsentflow.eval_tasks import TASKS, TaskMetadata
from defsentflow.evaluation.kinds.status import TaskStatus

__all__ = ["DictionaryKind", "dictionary_runs"]


def dictionary_runs(meta: TaskMetadata, config: Any) -> list[tuple[str, str]]:
    """The ``(split, protocol)`` pairs a dictionary task runs: the config's splits x its protocols
    that the task serves (:attr:`TaskMetadata.protocols`)."""
    return [(split, protocol) for split in config.revdict_splits for protocol in config.revdict_protocols
            if split in meta.splits and protocol in meta.protocols]


@dataclass(frozen=True)
class DictionaryKind:
    name: str
    reads_data_dir: bool = False
    extra_poolings: bool = False
    uses_head: bool = False

    def serves(self, meta: Any) -> bool:
        return meta.name == self.name

    def tasks(self, config: Any) -> tuple[str, ...]:
        return (self.name,) if self.name in config.tasks and dictionary_runs(TASKS[self.name], config) else ()

    def available(self, task: str, data_dir: str | None) -> TaskStatus:
        return TaskStatus(task, "evaluated", None, task)

    def inputs(self, task: str, config: Any) -> str:
        try:  # the dataset's artifact key names its content: a re-ingest with other definitions is another key
            key = resolve_dictionary(str(config.dictionary))[0]
        except KeyError:
            key = "missing"
        return f"{task}:{config.dictionary}:{key}"

    def settings(self, task: str, config: Any) -> dict[str, Any]:
        return {"runs": dictionary_runs(TASKS[task], config), "max_queries": config.revdict_max_queries,
                "ties": config.ties, "max_length": config.max_length, "autocast": config.autocast}

    def owner(self, row_task: str, tasks: tuple[str, ...]) -> str:
        return self.name
