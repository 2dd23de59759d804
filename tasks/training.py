"""Prefect tasks for PST and DefSent training: thin calls into defsentflow.training.pst.

Tasks take the validated config section as a dict and small references (keys, paths, hashes);
``inputs`` carries the content hashes of the dictionary's training split and the base model, so
every cache key changes with the data, the config and (via ``stage_task``) the code version. The
library's own content keys skip the work on a hit as well. Bookkeeping tasks (catalog rows for
this run) are never cached.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.caching import stage_task


def _section(section: dict[str, Any]):
    from defsentflow.training.pst_config import PstSection

    return PstSection.model_validate(section)


# What each cached stage actually reads of the section: a stage's Prefect key covers only these,
# so a sweep that varies the learning rate, the pooler or the temperature shares the untrained
# scores and the entry matrices (the library's own content keys agree).
_MATRIX_KEYS = ("base_model", "dictionary", "max_train_entries", "max_length", "autocast", "device",
                "entry_batch_size")
_UNTRAINED_KEYS = (*_MATRIX_KEYS, "grid", "selection", "selection_pooling", "selection_revdict_mode",
                   "selection_max_queries", "data_dir", "use_pooler")


def _only(section: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: section[k] for k in keys if k in section}


def _data(s: Any):
    from defsentflow.training.pst import load_training_data

    return load_training_data(s.dictionary, s.max_train_entries)


@task(name="pst-resolve-inputs", cache_policy=NO_CACHE)
def resolve_pst_inputs(section: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Start the run; hash the training data and base model; decide the selection metric."""
    from defsentflow.encoders import model_content_hash
    from defsentflow.storage import Catalog, hash_config
    from defsentflow.training.pst import selection_plan

    s = _section(section)
    Catalog().start_run("pst", config=section, config_hash=hash_config(section), run_id=run_id)
    data = _data(s)
    return {"train_hash": data.train_hash, "dictionary_hash": data.dictionary_hash,
            "base_hash": model_content_hash(s.base_model), "selection": selection_plan(s, data).to_dict()}


def score_untrained(section: dict[str, Any], inputs: dict[str, Any]) -> Any:
    """Step 0: the untrained encoder, scored once per pooling (cached by what it reads)."""
    return _score_untrained(_only(section, _UNTRAINED_KEYS), inputs)


@stage_task(name="pst-score-untrained")
def _score_untrained(section: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    from defsentflow.training.pst import SelectionPlan, run_step0

    s = _section(section)
    return run_step0(s, _data(s), SelectionPlan.from_dict(inputs["selection"])).to_dict()


@task(name="pst-plan-step", cache_policy=NO_CACHE)
def plan_pst_step(section: dict[str, Any], step: int, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The entry encoder, grid, seeds, lr and ICA flag of ``step``."""
    from defsentflow.training.pst import StepResult, plan_step

    prev = StepResult.from_dict(previous) if previous else None
    return plan_step(_section(section), step, prev).to_dict()


def build_entry_matrix(section: dict[str, Any], inputs: dict[str, Any], plan: dict[str, Any], encoding: str) -> Any:
    """Build the step's frozen entry matrix with the step's entry encoder (cached by what it reads:
    the encoder's content id, the training subset, the encoding and ICA, not the learning rate)."""
    entry = {"encoder": plan["encoder"], "encoder_id": plan["encoder_id"], "ica": plan["ica"], "step": plan["step"]}
    return _build_entry_matrix(_only(section, _MATRIX_KEYS), {"train_hash": inputs["train_hash"]}, entry, encoding)


@stage_task(name="pst-entry-matrix")
def _build_entry_matrix(section: dict[str, Any], inputs: dict[str, Any], entry: dict[str, Any],
                        encoding: str) -> dict[str, Any]:
    from defsentflow.training.pst import build_entry_matrix as build

    s = _section(section)
    return build(s, _data(s), encoder=entry["encoder"], encoder_id=entry["encoder_id"], encoding=encoding,
                 ica=entry["ica"], step=entry["step"]).to_dict()


@stage_task(name="pst-train-candidate")
def train_candidate(section: dict[str, Any], inputs: dict[str, Any], plan: dict[str, Any],
                    grid: dict[str, Any], seed: int, matrix: dict[str, Any]) -> dict[str, Any]:
    """Train a fresh copy of the original weights against the step's entry matrix."""
    from defsentflow.training.pst import GridPoint, MatrixRef, StepPlan
    from defsentflow.training.pst import train_candidate as train

    s, p = _section(section), StepPlan.from_dict(plan)
    return train(s, _data(s), step=p.step, seed=seed, grid=GridPoint.model_validate(grid), lr=p.lr,
                 matrix=MatrixRef.from_dict(matrix)).to_dict()


@stage_task(name="pst-score-candidate")
def score_candidate(section: dict[str, Any], inputs: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """Score one trained candidate on the selection metric."""
    from defsentflow.training.pst import Candidate, SelectionPlan
    from defsentflow.training.pst import score_candidate as score

    s = _section(section)
    return score(s, _data(s), Candidate.from_dict(candidate), SelectionPlan.from_dict(inputs["selection"])).to_dict()


@task(name="pst-record-step", cache_policy=NO_CACHE)
def record_pst_step(run_id: str, plan: dict[str, Any], candidates: list[dict[str, Any]],
                    matrices: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Choose the step's best candidate and write this run's ``pst_steps`` rows."""
    from defsentflow.training.pst import Candidate, MatrixRef, StepResult, choose_best, record_step

    cands = tuple(Candidate.from_dict(c) for c in candidates)
    result = StepResult(step=plan["step"], candidates=cands, best=choose_best(cands), seconds=seconds,
                        lr=plan.get("lr"), entry_matrices=tuple(MatrixRef.from_dict(m) for m in matrices))
    record_step(run_id, result)
    return result.to_dict()


@task(name="pst-finish", cache_policy=NO_CACHE)
def finish_pst(section: dict[str, Any], run_id: str, history: list[dict[str, Any]], inputs: dict[str, Any],
               seconds: float) -> Any:
    """Stop reason, winner (step 0 included), run record, ``pst_runs`` row and the final model row."""
    from defsentflow.storage import Catalog
    from defsentflow.training.pst import SelectionPlan, StepResult, should_stop
    from defsentflow.training.pst import finish_pst as finish

    s, steps = _section(section), [StepResult.from_dict(h) for h in history]
    result = finish(s, run_id, steps, SelectionPlan.from_dict(inputs["selection"]), should_stop(s, steps) or "",
                    seconds=seconds)
    Catalog().end_run(run_id, "completed", note=result.reason)
    return result


@task(name="pst-should-stop", cache_policy=NO_CACHE)
def pst_should_stop(section: dict[str, Any], history: list[dict[str, Any]]) -> str | None:
    """Why PST stops after the last step (``steps`` reached, or ``auto`` saw no improvement)."""
    from defsentflow.training.pst import StepResult, should_stop

    return should_stop(_section(section), [StepResult.from_dict(h) for h in history])


@task(name="defsent-resolve-inputs", cache_policy=NO_CACHE)
def resolve_defsent_inputs(section: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Start the run; hash the training data and the base model."""
    from defsentflow.encoders import model_content_hash
    from defsentflow.storage import Catalog, hash_config
    from defsentflow.training.pst import load_training_data

    Catalog().start_run(f"train-{section['method'].replace('_', '-')}", config=section,
                        config_hash=hash_config(section), run_id=run_id)
    data = load_training_data(section["dictionary"], section.get("max_train_entries"))
    return {"train_hash": data.train_hash, "base_hash": model_content_hash(section["base_model"])}


@stage_task(name="train-defsent")
def train_defsent(section: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """One DefSent / DefSent+ run (cached by the training data and base model hashes)."""
    from defsentflow.training.pst import run_defsent
    from defsentflow.training.pst_config import DefSentSection

    return run_defsent(DefSentSection.model_validate(section), run_id=None).to_dict()


@task(name="defsent-finish", cache_policy=NO_CACHE)
def finish_defsent(run_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """Close the run, naming the model it produced; a ``train-defsent`` stage row (keyed by the
    model's artifact key, a cached stage included) ties the model to this run for ``best-model``."""
    from defsentflow.storage import Catalog

    cat = Catalog()
    key = cat.query("SELECT artifact_key FROM models WHERE model_id = ?", [result["model_id"]])
    cat.record_stage(run_id, "train-defsent", "completed", cache_key=key[0]["artifact_key"] if key else None,
                     note=result["model_id"])
    cat.end_run(run_id, "completed", note=f"trained {result['model_id']}")
    return {**result, "run_id": run_id}
