"""PST's selection scorer: STS-B dev Spearman or reverse-dictionary dev MRR of one candidate.

PST's training code imports no evaluation code; the caller hands this function in
(``PstSteps(scorer=selection_score)``) and it runs wherever the candidate runs, with every input in
its :class:`~defsentflow.training.pst_records.ScoreRequest` (no catalog access).
"""

from __future__ import annotations

from typing import Any

from defsentflow.dictionary.store import load_dictionary_folder
from defsentflow.evaluation.sts import evaluate_sts
from defsentflow.storage.paths import from_root

__all__ = ["selection_score"]


def selection_score(request: Any) -> tuple[float, list[dict[str, Any]]]:
    """``(value, metric rows)`` of ``request.candidate`` on ``request.metric`` (dev splits only)."""
    cand = request.candidate
    if request.metric == "stsb-dev":
        rows = evaluate_sts(cand.model_dir, ["stsb-dev"], data_dir=request.data_dir, pooling=request.pooling,
                            autocast=request.autocast)
        value = next(r["value"] for r in rows
                     if r["task"] == "stsb-dev" and r["setting"] == "all" and r["metric"] == "spearman")
        return float(value), rows
    if request.metric != "revdict-mrr":
        raise ValueError(f"selection metric must be 'stsb-dev' or 'revdict-mrr', got {request.metric!r}")
    from defsentflow.evaluation.revdict import (
        evaluate_revdict,  # lazy: looked up at call time, so tests can replace it on its own module
    )

    mode = request.revdict_mode
    table = load_dictionary_folder(from_root(request.root, request.dictionary))
    res = evaluate_revdict(cand.model_dir, table, split="dev", modes=(mode,), pooling=request.pooling,
                           entry_encoding=cand.entry_encoding, max_queries=request.max_queries,
                           batch_size=request.batch_size, max_length=request.max_length, autocast=request.autocast,
                           device=request.device, root=request.root)
    return float(res["modes"][mode]["mrr"]), res["rows"]
