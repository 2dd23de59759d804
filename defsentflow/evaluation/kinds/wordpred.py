"""The word-prediction kind (:mod:`defsentflow.evaluation.wordpred`): the model's frozen head predicts
the defined word, for each (split, protocol) of the config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from defsentflow.eval_tasks import TASKS
from defsentflow.evaluation import wordpred
from defsentflow.evaluation.kinds.dictionary import DictionaryKind, dictionary_runs

__all__ = ["KIND"]


@dataclass(frozen=True)
class WordpredKind(DictionaryKind):
    name: str = "wordpred"

    def run(self, model: str, config: Any, tasks: tuple[str, ...], pooling: str, *, table: pa.Table | None = None,
            root: str | None = None, head: Any = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for split, protocol in dictionary_runs(TASKS[self.name], config):
            rows += wordpred.evaluate_wordpred(
                model, config.dictionary if table is None else table, root=root, split=split, protocol=protocol,
                pooling=pooling, max_queries=config.revdict_max_queries, batch_size=config.batch_size,
                max_length=config.max_length, autocast=config.autocast, device=config.device, ties=config.ties)["rows"]
        return rows


KIND = WordpredKind()
