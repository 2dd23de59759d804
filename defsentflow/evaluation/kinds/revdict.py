"""The reverse-dictionary kind (:mod:`defsentflow.evaluation.revdict`): every (split, protocol) of the
config sharing one encoding, in the config's modes; its head mode scores with the head it is given.

A head other than the model's own names itself in the head figures' task (:func:`head_tokens`:
``revdict-dev+q500+headcos`` for cosine logits where the model's own head takes dot products), so
a run's untrained baseline scored with the run's head never overwrites the bare head's figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from defsentflow.encoders.loading import resolve_model_path
from defsentflow.eval_tasks import TASKS, with_variant
from defsentflow.evaluation import revdict
from defsentflow.evaluation.kinds.dictionary import DictionaryKind, dictionary_runs
from defsentflow.model import Head, model_head

__all__ = ["KIND", "head_tokens"]


def head_tokens(own: Head, used: Head) -> tuple[str, ...]:
    """The tokens naming what of ``used`` differs from the model's own head ``own``
    (:data:`defsentflow.eval_tasks.HEAD_TOKENS`, in their order)."""
    out = []
    if used.normalize_logits != own.normalize_logits:
        out.append("headcos" if used.normalize_logits else "headdot")
    if used.use_pooler != own.use_pooler:
        out.append("headpooler" if used.use_pooler else "headnopooler")
    if used.entry_encoding != own.entry_encoding:
        out.append(f"head{used.entry_encoding}")
    if used.ica != own.ica:
        out.append("headica" if used.ica else "headnoica")
    return tuple(out)


@dataclass(frozen=True)
class RevdictKind(DictionaryKind):
    name: str = "revdict"
    uses_head: bool = True

    def settings(self, task: str, config: Any) -> dict[str, Any]:
        return {**super().settings(task, config), "modes": list(config.revdict_modes),
                "candidates": config.revdict_candidates}

    def run(self, model: str, config: Any, tasks: tuple[str, ...], pooling: str, *, table: pa.Table | None = None,
            root: str | None = None, head: Any = None) -> list[dict[str, Any]]:
        # looked up on its module at call time, so tests can replace it there
        results = revdict.evaluate_revdict_runs(
            model, config.dictionary if table is None else table, root=root, runs=dictionary_runs(TASKS[self.name], config),
            pooling=pooling, head=head, candidates=config.revdict_candidates, modes=config.revdict_modes,
            max_queries=config.revdict_max_queries, batch_size=config.batch_size, max_length=config.max_length,
            autocast=config.autocast, device=config.device, cache=config.cache, ties=config.ties)
        tokens = head_tokens(model_head(resolve_model_path(model), pooling=pooling), head) if head is not None else ()
        return [{**r, "task": with_variant(r["task"], tokens)} if r["setting"] == "head" and tokens else r
                for res in results for r in res["rows"]]


KIND = RevdictKind()
