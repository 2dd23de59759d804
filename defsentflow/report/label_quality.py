"""The run report's "Label quality" section: a run's Origin and baseline rows (``defsentflow origin``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["label_quality_section"]

_SQL = ("SELECT m.model_id, mo.method, mo.meta, m.task, m.value FROM metrics AS m "
        "JOIN models AS mo USING (model_id) "
        "WHERE m.run_id = $run_id AND m.setting = 'all' AND m.metric = 'spearman' "
        "AND mo.method IN ('origin', 'tfidf', 'word_avg', 'base') ORDER BY m.created_at")


def label_quality_section(rows: Callable[[str], list[dict[str, Any]]],
                          table: Callable[[Sequence[str], Sequence[Sequence[Any]]], str]) -> list[str]:
    """Markdown lines (none when the run measured no label quality).

    Args:
        rows: runs a query with ``$run_id`` bound to the report's run.
        table: formats a markdown table from columns and rows.
    """
    found = rows(_SQL)
    if not any(r["method"] == "origin" for r in found):
        return []   # no harvest labels measured in this run: baseline rows alone are no label quality
    tasks = list(dict.fromkeys(r["task"] for r in found))
    models: dict[str, dict[str, Any]] = {}
    for r in found:
        meta = r["meta"] if isinstance(r["meta"], dict) else json.loads(r["meta"] or "{}")
        m = models.setdefault(r["model_id"], {"label": meta.get("label", r["model_id"]), "method": r["method"]})
        m[r["task"]] = r["value"]
    body = [[m["label"], m["method"], *(m.get(t) for t in tasks)] for m in models.values()]   # cells escaped by table
    return ["## Label quality (Origin)", "",
            "Spearman x 100 against STS gold of the harvest labeller's pair similarity (Sun et al.'s Origin) "
            "for each context-set setting, beside TF-IDF cosine, averaged word vectors and the scorer's encoder.",
            "", table(["labels", "method", *tasks], body), ""]
