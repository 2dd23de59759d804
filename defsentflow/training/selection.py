"""PST's selection figure: a registry task's main figure on its dev split, by the one figure path.

A selection metric (``stsb-dev``: STS-B dev Spearman; ``revdict-mrr``: reverse-dictionary dev MRR
in the selection mode) is a registry task's main figure (:data:`defsentflow.eval_tasks.SELECTION_METRICS`).
After training a candidate, PST calls :func:`score_candidate` itself (as nanoGPT's loop calls its
``estimate_loss()``): the figure is the evaluation's (:func:`~defsentflow.evaluation.figures.evaluate_figures`),
keyed, stored and written as every other figure, so ``defsentflow eval <winner> --tasks stsb-dev``
reads it back. Runs wherever the candidate runs, with no catalog access: the inputs' content is
named in the flow process (:func:`selection_inputs`) and the worker reads the dictionary folder itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from defsentflow.dictionary.store import load_dictionary_folder
from defsentflow.eval_tasks import CANONICAL, SELECTION_METRICS, FigureSettings, SelectionMetric, metric_column
from defsentflow.evaluation.config import EvalConfig
from defsentflow.evaluation.figures import Figures, evaluate_figures
from defsentflow.evaluation.kinds import kind_of
from defsentflow.evaluation.sts_data import task_files
from defsentflow.storage.paths import from_root

__all__ = ["score_candidate", "selection_config", "selection_figure", "selection_input_file", "selection_inputs"]


def _metric(metric: str) -> SelectionMetric:
    try:
        return SELECTION_METRICS[metric]
    except KeyError:
        raise ValueError(f"selection metric must be one of {tuple(SELECTION_METRICS)}, got {metric!r}") from None


def selection_input_file(metric: str, data_dir: str | os.PathLike) -> Path | None:
    """The file the STS metric ``metric`` reads under ``data_dir`` (the registry's declaration, read by
    the STS readers' path rule), when it is there; None otherwise (a dictionary metric reads none)."""
    spec = SELECTION_METRICS.get(metric)
    if spec is None or spec.metadata.kind != "sts":
        return None
    files = task_files(data_dir, spec.task)
    return files[0] if files and all(f.is_file() for f in files) else None


def selection_config(section: Any, metric: str, *, pooling: str, data_dir: str | None,
                     dictionary: str | None) -> EvalConfig:
    """The evaluation the selection figure is. STS-B dev is read at the evaluation's canonical length
    (the figure the leaderboard's ``stsb_dev_spearman`` column holds, and ``eval --tasks stsb-dev``'s);
    the reverse dictionary with PST's length, query cap and mode, on the dev split."""
    spec = _metric(metric)
    common = dict(tasks=(spec.task,), pooling=pooling, autocast=section.autocast, device=section.device)
    if spec.metadata.kind == "sts":
        return EvalConfig(**common, data_dir=data_dir, max_length=CANONICAL.max_length)
    return EvalConfig(**common, dictionary=Path(dictionary or "").name or None, revdict_splits=(spec.split,),
                      revdict_modes=(section.selection_revdict_mode,), revdict_max_queries=section.selection_max_queries,
                      max_length=section.max_length, batch_size=section.entry_batch_size)


def selection_inputs(config: EvalConfig) -> dict[str, str]:
    """The content of each selection task's inputs, named where the catalog can be read (the flow process)."""
    return {t: kind_of(t).inputs(t, config) for t in config.tasks}


def selection_figure(config: EvalConfig, metric: str, mode: str) -> tuple[str, str, str]:
    """``(recorded task, setting, metric)`` of the selection figure (the registry names it)."""
    settings = FigureSettings(max_length=config.max_length, autocast=config.autocast,
                              max_queries=config.revdict_max_queries, candidates=config.revdict_candidates,
                              ties=config.ties)
    return _metric(metric).figure(mode=mode, settings=settings)


def score_candidate(model_dir: str, config: EvalConfig, metric: str, mode: str, *, root: str, model_id: str,
                    inputs: dict[str, str], dictionary: str | None = None, run_id: str | None = None,
                    compute: bool = True) -> tuple[float, str, Figures] | None:
    """``(value, leaderboard column, figures)`` of the selection figure of ``model_dir`` (dev splits
    only); ``compute=False``: only when it is stored (None otherwise)."""
    table = (load_dictionary_folder(from_root(root, dictionary))
             if compute and dictionary and _metric(metric).metadata.kind == "dictionary" else None)
    figs = evaluate_figures(model_dir, config, root=root, model_id=model_id, run_id=run_id, table=table,
                            inputs=inputs, compute=compute)
    if figs is None:
        return None
    task, setting, name = selection_figure(config, metric, mode)
    found = [r["value"] for r in figs.rows if (r["task"], r["setting"], r["metric"]) == (task, setting, name)]
    if not found:
        raise ValueError(f"{model_dir}: the evaluation gave no {task} {setting} {name} figure "
                         f"(rows: {sorted({r['task'] for r in figs.rows})})")
    return float(found[0]), metric_column(task, setting, name), figs
