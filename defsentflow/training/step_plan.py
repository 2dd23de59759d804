"""What a PST step trains and how its candidates are compared: the selection plan, the step plan,
the step's content key, and the choice among scored candidates.

Nothing here trains or scores: :mod:`defsentflow.training.pst` runs the steps in order, and
:mod:`defsentflow.training.candidate` trains and scores each candidate.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from defsentflow.config_tools import resolve_data_dir
from defsentflow.model.ids import base_model_id
from defsentflow.storage import Catalog, hash_config, hash_path
from defsentflow.training.data import TrainingData
from defsentflow.training.keys import artifact_key, base_model_of
from defsentflow.training.pst_config import GridPoint, PstSection
from defsentflow.training.pst_records import Candidate, SelectionPlan, StepPlan, StepResult

__all__ = ["base_candidates", "base_name_or_path", "choose_best", "choose_step", "entry_source", "group_means",
           "plan_step", "selection_plan", "step_key", "step_rate"]

log = logging.getLogger(__name__)


def base_name_or_path(section: PstSection) -> str:
    """The base model as the user named it (an alias or hub id stays a name: no path into a virtual
    environment in a record), or its resolved folder when it is a path."""
    return base_model_of(section)[0] if Path(section.base_model).expanduser().exists() else section.base_model


# -- selection ------------------------------------------------------------------------------------------
def selection_plan(section: PstSection, data: TrainingData,
                   input_file: Callable[[str, Path], Path | None] | None = None) -> SelectionPlan:
    """STS-B dev when asked for and available; otherwise reverse-dictionary dev MRR, with the reason.

    ``input_file(metric, data_dir)``: the file the selection metric's evaluator reads under
    ``data_dir`` (None: absent), as the task registry declares it
    (:func:`defsentflow.training.selection.selection_input_file`). Without it no STS file is known
    and the reverse dictionary selects.
    """
    revdict_hash = f"{data.dictionary_hash}:{section.selection_revdict_mode}:{section.selection_max_queries}"
    revdict = SelectionPlan(metric="revdict-mrr", data_dir=None, data_hash=revdict_hash)
    if section.selection == "revdict-mrr":
        return revdict
    data_dir = resolve_data_dir(section.data_dir)
    if data_dir is None:
        why = f"data_dir {section.data_dir!r} not found"
    else:
        stsb = input_file(section.selection, data_dir) if input_file is not None else None
        if stsb is not None:
            return SelectionPlan(metric="stsb-dev", data_dir=str(data_dir),
                                 data_hash=hash_path(stsb) if stsb else f"dir:{data_dir}")
        why = f"no STS-B dev set under {data_dir}"
    note = f"{why}: selecting by reverse-dictionary dev MRR ({section.selection_revdict_mode}) instead of STS-B dev"
    log.warning(note)
    return dataclasses.replace(revdict, note=note)


def choose_best(candidates: Sequence[Candidate]) -> Candidate:
    """The highest-scoring candidate; ties go to the earliest (the order candidates were made in)."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    best = candidates[0]
    for c in candidates[1:]:
        if c.score is not None and (best.score is None or c.score > best.score):
            best = c
    return best


def group_means(candidates: Sequence[Candidate]) -> dict[str, float]:
    """The mean score over seeds of every combination (:attr:`Candidate.group`), in candidate order."""
    groups: dict[str, list[float]] = {}
    for c in candidates:
        if c.score is not None:
            groups.setdefault(c.group, []).append(c.score)
    return {g: float(np.mean(v)) for g, v in groups.items()}


def choose_step(candidates: Sequence[Candidate], rule: str) -> tuple[Candidate, float | None, dict[str, float]]:
    """A step's choice under ``rule``: (the chosen candidate, the figure the step is compared by,
    every combination's mean over seeds).

    ``best_seed``: the best single candidate; its score is the figure. ``mean_over_seeds`` (the
    DefSent+ paper compares combinations by their mean over runs, its Table 8): the combination with
    the best mean (ties: the earliest), then its best seed; the mean is the figure.
    """
    means = group_means(candidates)
    if rule == "best_seed":
        best = choose_best(candidates)
        return best, best.score, means
    if rule != "mean_over_seeds":
        raise ValueError(f"selection_rule must be 'best_seed' or 'mean_over_seeds', got {rule!r}")
    if not means:
        best = choose_best(candidates)
        return best, None, means
    top = max(means, key=means.__getitem__)  # max keeps the first of equal means
    return choose_best([c for c in candidates if c.group == top]), means[top], means



# -- steps ----------------------------------------------------------------------------------------------
def base_candidates(section: PstSection, *, root: str | os.PathLike | None = None,
                    run_id: str | None = None) -> list[Candidate]:
    """Step 0: the untrained base model, once per pooling the later steps are scored with."""
    _, base_hash = base_model_of(section)
    model_id = base_model_id(section.base_model)  # by the name it was given, its content hash beside it
    Catalog(root).register_model(model_id, base_name_or_path(section), base_model=section.base_model, method="base",
                                 run_id=run_id, meta={"base_model_hash": base_hash})
    poolings = ([section.selection_pooling] if section.selection_pooling
                else list(dict.fromkeys(g.pooling for g in section.grid)))
    return [Candidate(step=0, seed=None, pooling=p, entry_encoding=None, lr=None, model_id=model_id,
                      model_dir=base_name_or_path(section),
                      artifact_key=f"base:{base_hash}", use_pooler=section.use_pooler) for p in poolings]


def entry_source(section: PstSection, history: Sequence[StepResult]) -> StepResult:
    """The step whose best encoder builds the next step's entry matrix.

    The last step, when it is step 1, a transition step (``transition_steps``) or scores at least
    as well as every earlier trained step; otherwise the best earlier trained step (a step that
    made things worse is not built on unless it is declared a transition, as the paper's step 2).
    """
    trained = [h for h in history if h.step >= 1]
    if not trained:
        raise ValueError("the next step needs a trained step before it")
    last = trained[-1]
    if last.step == 1 or last.step in section.transition_steps:
        return last
    best = trained[0]
    for h in trained[1:]:
        if h.figure is not None and (best.figure is None or h.figure >= best.figure):
            best = h
    return best


def plan_step(section: PstSection, step: int, history: Sequence[StepResult]) -> StepPlan:
    """What step ``step`` trains: the entry encoder, the grid, the seeds, the learning rate, whether
    the ICA matrix is a candidate too, and the model training starts from.

    ``history``: the finished steps, step 0 first. Step 1 builds entries with the base model and
    searches the grid (and ``step1_lr_grid``'s rates); step k > 1 builds them with :func:`entry_source`'s best encoder and keeps
    that candidate's grid point (or searches the grid again, a step of ``regrid_steps``) at :func:`step_rate`.
    """
    ica = section.ica_step == step
    if step == 1:
        _, base_hash = base_model_of(section)
        rates = tuple(section.step1_lr_grid or ())  # DefSent+ Appendix A: step 1's rate searched on dev
        return StepPlan(step=1, lr=rates[0] if rates else section.lr_for_step(1), grid=tuple(section.grid),
                        seeds=tuple(section.seeds), ica=ica, encoder=base_name_or_path(section), encoder_id=base_hash,
                        source_step=0, lrs=rates if len(rates) > 1 else ())
    if not history or history[-1].step != step - 1:
        raise ValueError(f"step {step} needs step {step - 1}'s result")
    source = entry_source(section, history)
    best = source.best
    grid = (tuple(section.grid) if step in section.regrid_steps
            else (GridPoint(pooling=best.pooling, entry_encoding=best.entry_encoding),))
    start = {} if section.separate else {"start": best.model_dir, "start_id": best.artifact_key}
    return StepPlan(step=step, lr=step_rate(section, step, history), grid=grid, seeds=tuple(section.seeds), ica=ica,
                    encoder=best.model_dir, encoder_id=best.artifact_key, source_step=source.step, **start)


def step_rate(section: PstSection, step: int, history: Sequence[StepResult]) -> float:
    """Step ``step``'s learning rate (k > 1): ``lr_per_step`` / ``lr``, never above the rate the previous step
    chose (DefSent+ Appendix A: each step's rate is no bigger than the previous one's), which a step-1 rate
    grid (``step1_lr_grid``) can leave below the configured one."""
    rate = section.lr_for_step(step)
    previous = history[-1].lr if history else None
    if previous is not None and previous < rate:
        log.info("step %d: learning rate %g lowered to step %d's chosen %g (Appendix A)", step, rate, step - 1,
                 previous)
        return previous
    return rate


def step_key(section: PstSection, data: TrainingData, plan: StepPlan, selection: SelectionPlan) -> str:
    _, base_hash = base_model_of(section)
    training = section.model_dump(mode="json", include={"use_pooler", "batch_size", "max_length", "autocast",
                                                         "temperature", "normalize_logits", "selection_pooling"})
    if section.batching != "length":  # the default keeps earlier keys (and their cached steps) valid
        training["batching"] = section.batching
    if section.mlm_dense_from is not None:
        training["mlm_dense_from"] = section.mlm_dense_from
    if plan.ica:
        training["ica_fit"] = section.ica_fit.model_dump(mode="json")
    plan_fields = {k: v for k, v in plan.to_dict().items() if k not in ("encoder", "start")}  # *_id name them
    rule = section.selection_rule
    return artifact_key("pst_step", base_hash, data.train_hash, hash_config(plan_fields), hash_config(training),
                selection.metric, selection.data_hash, rule)
