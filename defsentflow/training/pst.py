"""Progressive Separate Training (PST) of DefSent+ encoders, and single DefSent/DefSent+ runs.

PST, step by step:

* step 0: the untrained encoder is a candidate, scored like every other, so PST never returns a
  model worse on the selection metric than the one it started from;
* step 1: the entry matrix (the frozen prediction head) is built with the ORIGINAL encoder, and a
  fresh copy of the original weights is trained for every (grid point, seed); the grid point of
  the best candidate is kept for the later steps;
* step k > 1: the entry matrix is rebuilt with step k-1's best encoder (or, when step k-1 made
  things worse and is not a ``transition_steps`` step, with the best earlier step's) and, again,
  fresh copies of the ORIGINAL weights are trained (``separate: false`` continues the previous
  encoder instead, to measure what separate training buys); the learning rate never grows from one
  step to the next;
* at ``ica_step`` the ICA-transformed entry matrix is a candidate beside the plain one (Eq. 11 of
  Liu 2024), trained with the same seeds.

Candidates of a step are chosen by ``selection_rule``: the best single candidate (``best_seed``)
or the combination with the best mean over seeds, then its best seed (``mean_over_seeds``, the
paper's Table 8). The selection metric is STS-B dev Spearman or reverse-dictionary dev MRR;
without STS data the run falls back to the latter and says so. ``steps: auto`` stops when a step
does not improve on the previous one, except before ``ica_step`` and after a transition step. The
run record names the winning step and why.

Every piece is a content-addressed artifact (inputs + config + code version -> key): entry
matrices, trained models, selection scores and whole steps. A piece whose artifact exists is
reused, so a second run with the same inputs recomputes nothing, and a killed run resumes
(training itself resumes from its checkpoint).

This module is PST's one sequencer. It takes its step executor as an argument (:class:`PstSteps`):
run locally (the CLI), every piece is a plain call; the ``pst`` flow hands in the same pieces
wrapped as Prefect tasks and each step as a subflow, so both paths run this code and write the
same catalog rows. The library never imports Prefect.

Example:
    >>> from defsentflow.training.pst_config import PstSection
    >>> result = run_pst(PstSection(dictionary="sample", steps=2, seeds=[0]), run_id="demo")
    >>> result.winner.step, result.reason
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from defsentflow.fanout import FanOut, runs_beside, sequential
from defsentflow.model.ids import run_alias
from defsentflow.storage import Catalog, check_identifier, data_root, hash_config, hash_path, write_json
from defsentflow.storage.paths import relative_tree, resolved_tree, root_place
from defsentflow.ties import beats
from defsentflow.training.candidate import (
    plan_base_candidate,
    plan_candidate,
    run_candidate,
    run_candidates,
    start_candidates,
)
from defsentflow.training.data import TrainingData, load_training_data, splits_for
from defsentflow.training.defsent_run import run_defsent
from defsentflow.training.entry_matrix import build_entry_matrix
from defsentflow.training.keys import artifact_key
from defsentflow.training.pst_config import PstSection
from defsentflow.training.pst_records import (
    Candidate,
    DefSentResult,
    MatrixRef,
    PstResult,
    SelectionPlan,
    StepPlan,
    StepResult,
)
from defsentflow.training.selection import selection_input_file
from defsentflow.training.step_plan import (
    base_candidates,
    choose_best,
    choose_step,
    plan_step,
    selection_plan,
    step_key,
)
from defsentflow.training.step_records import record_step

__all__ = [
    "Candidate",
    "DefSentResult",
    "MatrixRef",
    "PstResult",
    "PstSteps",
    "SelectionPlan",
    "StepPlan",
    "StepResult",
    "TrainingData",
    "base_candidates",
    "build_entry_matrix",
    "choose_best",
    "choose_step",
    "choose_winner",
    "finish_pst",
    "load_training_data",
    "plan_step",
    "record_step",
    "run_defsent",
    "run_pst",
    "run_step",
    "run_candidate",
    "run_step0",
    "start_step0",
    "selection_plan",
    "should_stop",
    "step_key",
]


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The local executor of a whole step: a plain call."""
    return fn(*args, **kwargs)


@dataclass(frozen=True)
class PstSteps:
    """How PST's pieces run. The defaults are the library functions, called in process; the
    ``pst`` flow passes the same functions wrapped as Prefect tasks, and ``step`` as a subflow
    (``step(fn, *args, **kwargs)`` runs one whole step). Nothing here decides anything.

    ``fan_out(fn, calls) -> results in submission order`` runs a step's candidates (one
    :func:`~defsentflow.training.candidate.run_candidate` call each; default a plain loop, the
    flows pass one that submits to a Dask cluster); each candidate calls the one figure path for its
    selection figure itself (:mod:`defsentflow.training.selection`); ``threads`` is the torch
    thread count each candidate runs with (None: the process's).
    """

    build_matrix: Callable[..., MatrixRef] = build_entry_matrix
    fan_out: FanOut = sequential
    step: Callable[..., StepResult] = call
    threads: int | None = None


LOCAL = PstSteps()



def run_step0(section: PstSection, data: TrainingData, selection: SelectionPlan, *,
              root: str | os.PathLike | None = None, run_id: str | None = None, steps: PstSteps = LOCAL) -> StepResult:
    """Step 0: score the untrained encoder (once per pooling the later steps are scored with)."""
    return start_step0(section, data, selection, root=root, run_id=run_id, steps=steps)()


def start_step0(section: PstSection, data: TrainingData, selection: SelectionPlan, *,
                root: str | os.PathLike | None = None, run_id: str | None = None,
                steps: PstSteps = LOCAL) -> Callable[[], StepResult]:
    """:func:`run_step0` in two halves: its scoring starts now (beside this process on a cluster), and
    the returned function waits for it and returns the step's result."""
    t0 = time.perf_counter()
    specs = [plan_base_candidate(section, data, selection, c, root=root, run_id=run_id, threads=steps.threads)
             for c in base_candidates(section, root=root, run_id=run_id)]
    wait = start_candidates(specs, fan_out=steps.fan_out, root=root)

    def finish() -> StepResult:
        cands = wait()
        best, figure, means = choose_step(cands, "best_seed")  # one untrained model: no seeds to average
        return StepResult(step=0, candidates=tuple(cands), best=best, seconds=time.perf_counter() - t0,
                          rule=section.selection_rule, figure=figure, group_means=means,
                          cached=wait.computed == 0)  # every score found: the stage reused, as later steps say

    return finish


def run_step(section: PstSection, data: TrainingData, plan: StepPlan, selection: SelectionPlan, *,
             root: str | os.PathLike | None = None, run_id: str | None = None, steps: PstSteps = LOCAL) -> StepResult:
    """Build the step's entry matrices, train and score every (grid point, ICA, seed) through
    ``steps.fan_out``, pick the best.

    A step whose artifact exists is returned as recorded (``cached=True``) without any work.
    """
    t0 = time.perf_counter()
    key = step_key(section, data, plan, selection)
    cat = Catalog(root)
    found = cat.artifact(key)
    if found is not None:
        done = StepResult.from_dict(resolved_tree(cat.root, json.loads(Path(found["path"]).read_text())))
        paths = [c.model_dir for c in done.candidates] + [m.path for m in done.entry_matrices]
        if all(Path(p).exists() for p in paths):  # else rebuild what is gone (the rest is found by key)
            return dataclasses.replace(done, cached=True, seconds=time.perf_counter() - t0)
    variants = (False, True) if plan.ica else (False,)  # Eq. 11: the ICA matrix is an extra candidate
    matrices = {(enc, ica): steps.build_matrix(section, data, encoder=plan.encoder, encoder_id=plan.encoder_id,
                                               encoding=enc, ica=ica, step=plan.step, root=root, run_id=run_id,
                                               fan_out=steps.fan_out)
                for enc in dict.fromkeys(g.entry_encoding for g in plan.grid) for ica in variants}
    specs = [plan_candidate(section, data, selection, step=plan.step, seed=seed, grid=g, lr=lr,
                            matrix=matrices[(g.entry_encoding, ica)], start=plan.start, start_id=plan.start_id,
                            root=root, run_id=run_id, threads=steps.threads, lr_searched=bool(plan.lrs))
             for g in plan.grid for lr in plan.rates for ica in variants for seed in plan.seeds]
    cands = run_candidates(specs, fan_out=steps.fan_out, root=root)
    best, figure, means = choose_step(cands, section.selection_rule)
    result = StepResult(step=plan.step, candidates=tuple(cands), best=best, key=key,
                        seconds=time.perf_counter() - t0, lr=best.lr if plan.lrs else plan.lr,
                        entry_matrices=tuple(matrices.values()),
                        rule=section.selection_rule, figure=figure, group_means=means)
    final = root_place(data_root(root), "pst_steps", f"{key}.json")
    write_json(relative_tree(cat.root, result.to_dict()), final)  # paths in the root: root-relative
    cat.register_artifact(key, "pst_step", final, hash_path(final), name=f"step{plan.step}", run_id=run_id,
                          config=plan.to_dict())
    return result


def should_stop(section: PstSection, history: Sequence[StepResult]) -> str | None:
    """Why to stop after the last step of ``history`` (None: go on). ``history[0]`` is step 0.

    ``steps: auto`` stops at the first step whose figure does not improve on the previous step's,
    but never before ``ica_step`` and never right after a transition step.
    """
    last = history[-1]
    before_ica = section.ica_step is not None and last.step < section.ica_step
    if section.steps == "auto" and last.step >= 1 and not before_ica and last.step not in section.transition_steps:
        prev = history[-2]
        if not (last.figure is not None and prev.figure is not None and last.figure > prev.figure):
            return (f"auto: stopped after step {last.step}: {last.best.metric} {_fmt(last.figure)} did not "
                    f"improve on step {prev.step}'s {_fmt(prev.figure)}")
    if last.step >= section.total_steps:
        if section.steps == "auto":
            return f"auto: reached max_steps={section.max_steps}"
        return f"ran all {last.step} steps"
    return None


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def choose_winner(history: Sequence[StepResult], final: str = "best_dev") -> tuple[Candidate, str]:
    """The chosen candidate of the step with the best figure (step 0 included; figures equal to
    the 4 significant digits they are reported at tie, and a tie goes to the earlier step), and why. The figure is the step's best score, or its chosen combination's mean
    over seeds under ``mean_over_seeds``. ``final="last"``: the last step's chosen candidate
    whatever the figures (the papers' final encoder), the best step still named in the reason."""
    top = history[0]
    for s in history[1:]:
        if beats(s.figure, top.figure):  # a tie as reported goes to the earlier step (defsentflow.ties)
            top = s
    by_mean = history[-1].rule == "mean_over_seeds"
    per_step = ", ".join(f"step {s.step}: {_fmt(s.figure)}" for s in history)
    if final == "last" and len(history) > 1:
        last = history[-1]
        winner = last.best
        reason = (f"the last step, {winner.step} ({winner.label}), as final: last asks ({winner.metric or 'score'} "
                  f"{_fmt(last.figure)}; the best step by dev is {top.step} with {_fmt(top.figure)}; "
                  f"{'mean over seeds' if by_mean else 'best'} per step: {per_step})")
        return winner, reason
    winner = top.best
    reason = (f"step {winner.step} ({winner.label}) has the best {winner.metric or 'score'} "
              f"{_fmt(top.figure)} ({'mean over seeds' if by_mean else 'best'} per step: {per_step})")
    if by_mean:
        reason += f"; its best seed is returned ({_fmt(winner.score)})"
    if winner.step == 0:
        reason += "; no trained encoder beat the untrained one, so the untrained encoder is returned"
    return winner, reason


def finish_pst(section: PstSection, run_id: str, history: Sequence[StepResult], selection: SelectionPlan,
               stop_note: str, *, root: str | os.PathLike | None = None, seconds: float = 0.0) -> PstResult:
    """Pick the winner, write the run record, name the chosen encoder ``pst-<run_id>`` (an alias of its
    own id, which the result returns: a re-run of the same config returns the same id)."""
    winner, reason = choose_winner(history, section.final)
    notes = "; ".join(n for n in (selection.note, stop_note) if n)
    alias = run_alias(run_id)
    record_path = root_place(data_root(root), "pst_runs", f"{check_identifier(run_id, 'run id')}.json")
    result = PstResult(run_id=run_id, selection=selection, steps=tuple(history), winner=winner, reason=reason,
                       stop_note=stop_note, model_id=winner.model_id, model_dir=winner.model_dir,
                       record_path=str(record_path), seconds=seconds)
    write_json(relative_tree(data_root(root), {**result.to_dict(), "config": section.model_dump(mode="json")}),
               record_path)
    key = artifact_key("pst_result", *(s.key or s.best.artifact_key for s in history), winner.artifact_key, winner.pooling)
    cat = Catalog(root)
    meta = {"winner_step": winner.step, "winner_model_id": winner.model_id, "pooling": winner.pooling,
            "selection_metric": winner.metric, "selection_score": winner.score, "reason": reason, "note": notes,
            "selection_rule": section.selection_rule, "selection_column": winner.column}
    with cat.session():  # one open of the catalog file for the rows and the winner's names
        with cat.transaction() as con:
            cat.register_artifact(key, "pst_result", record_path, hash_path(record_path), name=alias, run_id=run_id,
                                  meta=meta, con=con)
            con.execute("DELETE FROM pst_runs WHERE run_id = ?", [run_id])
            con.execute(
                "INSERT INTO pst_runs (run_id, base_model, dictionary, steps_run, winner_step, winner_model_id, "
                "model_id, selection_metric, selection_score, reason, note, record_path, seconds, selection_rule, "
                "train_entries, selection_column) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, section.base_model, section.dictionary, history[-1].step, winner.step, winner.model_id, alias,
                 winner.metric, winner.score, reason, notes, cat.rel(record_path), seconds, section.selection_rule,
                 section.train_entries, winner.column],
            )
        # the winner is filed already (a trained candidate's record, or step 0's base model): the run's
        # name for it is an alias, the row keeps its own fields
        cat.register_model(winner.model_id, winner.model_dir, base_model=section.base_model, pooling=winner.pooling,
                           run_id=run_id, names=[(alias, "run")], keep=True)
    return result


def run_pst(section: PstSection, *, run_id: str, root: str | os.PathLike | None = None,
            on_step: Callable[[StepResult], None] | None = None, steps: PstSteps = LOCAL) -> PstResult:
    """Run PST end to end; resumable and cached piece by piece.

    Args:
        section: the validated ``pst:`` settings.
        run_id: this run's id in the catalog (``runs``, ``pst_steps``, ``pst_runs``).
        root: data root (default ``$DEFSENTFLOW_HOME`` or ``./storage``).
        on_step: called with each finished step (step 0 first), e.g. to print progress.
        steps: the executor of the pieces (:class:`PstSteps`; the ``pst`` flow passes Prefect tasks).
    """
    t0 = time.perf_counter()
    cat = Catalog(root)
    with cat.recorded_run("pst", run_id, config=section.model_dump(mode="json"), config_hash=hash_config(section)) as run:
        data = load_training_data(section.dictionary, section.max_train_entries,
                                  splits=splits_for(section.train_entries), root=root)
        selection = selection_plan(section, data, selection_input_file)
        history: list[StepResult] = []
        stop_note = ""

        def finished(result: StepResult) -> None:
            with cat.session():  # one open of the catalog file for both writes
                record_step(run_id, result, root=root)
                cat.record_stage(run_id, f"pst-step-{result.step}", "cached" if result.cached else "completed",
                                 cache_key=result.key, seconds=result.seconds)
            history.append(result)
            if on_step is not None:
                on_step(result)

        # On a cluster, step 0 (scoring the untrained encoder) runs beside step 1, which does not
        # depend on it; step 0 is still recorded first. In one process the steps run in turn.
        beside = section.total_steps >= 1 and runs_beside(steps.fan_out)
        step0 = start_step0(section, data, selection, root=root, run_id=run_id, steps=steps) if beside else None
        for step in range(0, section.total_steps + 1):
            if step == 0:
                if step0 is None:
                    finished(steps.step(run_step0, section, data, selection, root=root, run_id=run_id, steps=steps))
                continue
            plan = plan_step(section, step, history)
            result = steps.step(run_step, section, data, plan, selection, root=root, run_id=run_id, steps=steps)
            if step0 is not None:
                finished(step0())
                step0 = None
            finished(result)
            stop_note = should_stop(section, history) or ""
            if stop_note:
                break
        out = finish_pst(section, run_id, history, selection, stop_note, root=root, seconds=time.perf_counter() - t0)
        run.note = out.reason
    return out
