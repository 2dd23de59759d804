"""PST's selection figure, computed as every other figure: by the task registry's evaluator.

A selection metric (``stsb-dev``: STS-B dev Spearman; ``revdict-mrr``: reverse-dictionary dev MRR in
the selection mode) is a registry task's main figure on its dev split
(:data:`defsentflow.eval_tasks.SELECTION_METRICS`). :class:`SelectionScorer` turns PST's
:class:`~defsentflow.training.pst_records.ScoreRequest` into the evaluation config of that figure,
runs the task's evaluator (:data:`~defsentflow.evaluation.tasks.EVALUATORS`) and keys the result
with the evaluation key (:func:`~defsentflow.evaluation.suite.evaluation_key`: every setting that
changes the number, ``autocast`` included), so a candidate's figure lies in the one evaluation
store (``cache/evaluations``) and its name is the figure's leaderboard column.

PST's training code imports no evaluation code; the caller hands the scorer in
(``PstSteps(scorer=selection_score)``) and it runs wherever the candidate runs, with every input in
its request (no catalog access: the worker reads the dictionary folder itself).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from defsentflow.dictionary.store import load_dictionary_folder
from defsentflow.eval_tasks import CANONICAL, SELECTION_METRICS, FigureSettings, SelectionMetric, metric_column
from defsentflow.evaluation.config import EvalConfig
from defsentflow.evaluation.sts_data import task_files
from defsentflow.evaluation.suite import evaluation_key
from defsentflow.evaluation.tasks import EVALUATORS
from defsentflow.storage.paths import from_root

__all__ = ["SelectionScorer", "selection_score"]


class SelectionScorer:
    """``scorer(request) -> (value, metric rows)``, with the key and column of the figure it computes.

    Example:
        >>> value, rows = selection_score(request)
        >>> selection_score.column(request)
        'stsb_dev_spearman'
    """

    def metric(self, request: Any) -> SelectionMetric:
        try:
            return SELECTION_METRICS[request.metric]
        except KeyError:
            raise ValueError(f"selection metric must be one of {tuple(SELECTION_METRICS)}, got {request.metric!r}") from None

    def input_file(self, metric: str, data_dir: str | os.PathLike) -> Path | None:
        """The file the STS metric ``metric`` reads under ``data_dir`` (the registry's declaration, read
        by the STS readers' path rule), when it is there; None otherwise (a dictionary metric reads none)."""
        spec = SELECTION_METRICS.get(metric)
        if spec is None or spec.metadata.kind != "sts":
            return None
        files = task_files(data_dir, spec.task)
        return files[0] if files and all(f.is_file() for f in files) else None

    def config(self, request: Any) -> EvalConfig:
        """The evaluation the figure is. STS-B dev is read at the evaluation's canonical length (the
        figure the leaderboard's ``stsb_dev_spearman`` column holds); the reverse dictionary with
        PST's length, query cap and mode, on the dev split."""
        metric = self.metric(request)
        common = dict(tasks=(metric.task,), pooling=request.pooling, autocast=request.autocast, device=request.device)
        if metric.metadata.kind == "sts":
            return EvalConfig(**common, data_dir=request.data_dir, max_length=CANONICAL.max_length)
        return EvalConfig(**common, dictionary=Path(request.dictionary or "").name or None, revdict_splits=(metric.split,),
                          revdict_modes=(request.revdict_mode,), revdict_max_queries=request.max_queries,
                          max_length=request.max_length, batch_size=request.batch_size)

    def figure(self, request: Any) -> tuple[str, str, str]:
        """``(recorded task, setting, metric)`` of the selection figure (the registry names it)."""
        config = self.config(request)
        settings = FigureSettings(max_length=config.max_length, autocast=config.autocast,
                                  max_queries=config.revdict_max_queries, candidates=config.revdict_candidates,
                                  ties=config.ties)
        return self.metric(request).figure(mode=request.revdict_mode, settings=settings)

    def column(self, request: Any) -> str:
        """The figure's leaderboard column (what the leaderboard sorts a PST run's models by)."""
        return metric_column(*self.figure(request))

    def key(self, request: Any, *, model_key: str, inputs_hash: str) -> str:
        """The evaluation key of the figure of the model with content key ``model_key`` on inputs of
        content ``inputs_hash``: the one evaluation store's key."""
        return evaluation_key(self.config(request), request.candidate.model_dir, model_key=model_key,
                              inputs_hash=inputs_hash)

    def __call__(self, request: Any) -> tuple[float, list[dict[str, Any]]]:
        """``(value, metric rows)`` of ``request.candidate`` (dev splits only)."""
        config = self.config(request)
        table = (load_dictionary_folder(from_root(request.root, request.dictionary))
                 if request.dictionary and self.metric(request).metadata.kind == "dictionary" else None)
        rows = [r for evaluator in EVALUATORS if evaluator.tasks(config)
                for r in evaluator.run(request.candidate.model_dir, config, config.pooling, table=table, root=request.root)]
        task, setting, metric = self.figure(request)
        found = [r["value"] for r in rows if (r["task"], r["setting"], r["metric"]) == (task, setting, metric)]
        if not found:
            raise ValueError(f"{request.candidate.model_dir}: the evaluation gave no {task} {setting} {metric} "
                             f"figure (rows: {sorted({r['task'] for r in rows})})")
        return float(found[0]), rows


selection_score = SelectionScorer()
