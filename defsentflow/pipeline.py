"""The pipeline's one sequencer and its decisions: fingerprints, run records, the encoder PST starts
from, PST's best trained candidate and the evaluation plan.

:func:`run_pipeline` runs ingest dictionary -> (harvest -> surrogate) -> (pretrain) -> PST or
DefSent -> evaluate -> report, taking its stage executor as an argument (:class:`PipelineSteps`).
``flows/pipeline.py`` hands in the stage flows as subflows; nothing in the flow decides anything.
Prefect-free, like the rest of the library.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from defsentflow.config import PipelineConfig, load_config, resolve_path
from defsentflow.config_tools import resolve_data_dir
from defsentflow.encoders.loading import resolve_model_path
from defsentflow.evaluation.kinds import kind_of
from defsentflow.evaluation.task_status import record_run_tasks, runnable_tasks, task_statuses
from defsentflow.model import model_head
from defsentflow.model.ids import base_model_id, pooled_model_id
from defsentflow.preflight import preflight
from defsentflow.registry import champion_alias, gate_run, record_unchanged
from defsentflow.storage import (
    Catalog,
    check_identifier,
    code_version,
    combine_hashes,
    data_root,
    hash_config,
    hash_path,
    root_place,
)
from defsentflow.storage.paths import relative_tree
from defsentflow.storage.rebuild import heal_catalog
from defsentflow.storage.runs import mark_interrupted_runs

__all__ = ["STAGE_METHODS", "PipelineSteps", "best_trained", "evaluation_plan", "input_fingerprint", "log_path",
           "new_run_id", "previous_run", "resolved_config", "run_pipeline", "selected_model_dir", "task_plan",
           "training_section"]


def _source_paths(cfg: PipelineConfig) -> list[str]:
    paths = [p for s in cfg.dictionary.sources for p in s.paths]
    if cfg.harvest is not None:
        paths += list(cfg.harvest.corpus.paths)
        if cfg.harvest.pairs.extra_sentences:
            paths.append(cfg.harvest.pairs.extra_sentences)
        if cfg.harvest.pairs.file:
            paths.append(cfg.harvest.pairs.file)
    return paths


def input_fingerprint(config: dict[str, Any]) -> dict[str, Any]:
    """What a retraining depends on: source contents, the config and the code version."""
    cfg = PipelineConfig.model_validate(config)
    sources = {p: hash_path(resolve_path(p)) for p in _source_paths(cfg)}
    # where it runs and when its model is promoted change no result
    cfg_hash = hash_config(cfg.model_dump(mode="json", exclude={"compute", "promote"}))
    return {"sources": sources, "config": cfg_hash, "code_version": code_version(),
            "key": combine_hashes([*sorted(f"{k}={v}" for k, v in sources.items()), cfg_hash, code_version()])}


def new_run_id(name: str) -> str:
    """A new pipeline run's id: the config's name and 8 random hex digits (``demo-1a2b3c4d``)."""
    return check_identifier(f"{name}-{uuid.uuid4().hex[:8]}", "run id")


def log_path(run_id: str) -> Path:
    """Where a pipeline run's log goes: ``<data root>/logs/RUN_ID.log``."""
    return root_place(data_root(), "logs", f"{check_identifier(run_id, 'run id')}.log")


def previous_run(cat: Catalog, name: str, fingerprint: dict[str, Any]) -> str | None:
    """The newest completed run of config ``name`` that saw the same inputs (``fingerprint``), or None."""
    rows = cat.query(
        "SELECT run_id FROM runs WHERE flow = 'pipeline' AND status = 'completed' AND config_hash = ? "
        "AND json_extract_string(config, '$.name') = ? ORDER BY ended_at DESC LIMIT 1",
        [fingerprint["key"], name],
    )
    return rows[0]["run_id"] if rows else None


def selected_pooling(cfg: PipelineConfig, model_dir: str) -> str:
    """``eval.pooling: null``: the pooling a trained candidate was selected with (PST's
    ``selection_pooling``), else trained with (its ``defsentflow.json``), else mean."""
    chosen = getattr(cfg.pst, "selection_pooling", None) if cfg.pst is not None else None
    return chosen or model_head(model_dir).pooling


def evaluation_plan(config: dict[str, Any], selected: dict[str, Any], surrogate: dict[str, Any] | None,
                    base_model: str, trained: dict[str, Any] | None = None,
                    seeds: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Evaluate sections for the selected encoder and the baselines, restricted to available data.

    ``base_model`` is the encoder PST started from (the configured one, the surrogate, or the
    pretrained raw encoder): the "untrained" baseline. ``trained`` (``model_dir``, ``model_id``)
    is PST's best trained candidate; with ``eval.best_trained`` it is evaluated under its own id
    too (free when it is the selected model: the evaluation is cached by content).
    """
    cfg = PipelineConfig.model_validate(config)
    ev = cfg.eval
    data_dir = resolve_data_dir(ev.data_dir)
    tasks = runnable_tasks(task_plan(config))  # sickr without its test file: evaluated on trial (fallback)
    # The section's evaluation settings, as the evaluate flow takes them (EvaluateSection).
    pipeline_only = {"baselines", "best_trained", "seed_stats", "pooling", "also_poolings", "baseline_poolings"}
    common = {**ev.model_dump(mode="json", exclude=pipeline_only), "tasks": tasks,
              "data_dir": str(data_dir) if data_dir else None, "dictionary": cfg.dictionary.name}
    sts_only = [t for t in tasks if kind_of(t).extra_poolings]  # further poolings: STS (Table 7)
    pooling = ev.pooling or selected_pooling(cfg, selected["model_dir"])
    plan = [{**common, "model": selected["model_dir"], "model_id": selected["model_id"], "pooling": pooling}]
    if ev.best_trained and trained:
        plan.append({**common, "model": trained["model_dir"], "model_id": trained["model_id"],
                     "pooling": ev.pooling or selected_pooling(cfg, trained["model_dir"])})
    if ev.seed_stats:  # every seed of the chosen combination at every step (report.seed_stats), every pooling
        for m in seeds or []:
            plan.append({**common, "model": m["model_dir"], "model_id": m["model_id"], "pooling": pooling})
            plan += [{**common, "tasks": sts_only, "model": m["model_dir"], "model_id": m["model_id"], "pooling": extra}
                     for extra in ev.also_poolings if extra != pooling]
    base = base_model
    base_id = base_model_id(base)
    if "untrained" in ev.baselines:
        plan.append({**common, "model": base, "model_id": base_id, "pooling": pooling})
    # the untrained baseline with further poolings on every task (DefSent's Table 2: CLS, Mean and Max)
    every = [p for p in dict.fromkeys(ev.baseline_poolings) if p != pooling] if "untrained" in ev.baselines else []
    plan += [{**common, "model": base, "model_id": pooled_model_id(base_id, extra), "pooling": extra} for extra in every]
    for extra in (p for p in ev.also_poolings if p != pooling):
        plan.append({**common, "tasks": sts_only, "model": selected["model_dir"],
                     "model_id": pooled_model_id(selected["model_id"], extra), "pooling": extra})
        if "untrained" in ev.baselines and extra not in every:
            plan.append({**common, "tasks": sts_only, "model": base, "model_id": pooled_model_id(base_id, extra), "pooling": extra})
    if "sbert_wk" in ev.baselines:
        plan.append({**common, "tasks": sts_only or tasks, "model": base,
                     "model_id": pooled_model_id(base_id, "sbert_wk"), "pooling": "sbert_wk"})
    if cfg.pst is not None:  # the untrained baseline's head figures with the head the run trains
        own = model_head(selected["model_dir"]) if model_head(selected["model_dir"]).trained else None
        head = {"normalize_logits": cfg.pst.normalize_logits, "use_pooler": cfg.pst.use_pooler,
                "entry_encoding": own.entry_encoding if own else cfg.pst.grid[0].entry_encoding}
        plan = [{**p, "head": head} if p["model"] == base and p["pooling"] != "sbert_wk" else p for p in plan]
    if "surrogate" in ev.baselines and surrogate:
        plan.append({**common, "model": surrogate["model_dir"], "model_id": surrogate["model_id"], "pooling": "mean"})
    return [p for p in plan if p["tasks"]]


def task_plan(config: dict[str, Any]) -> list[Any]:
    """Each requested evaluation task's :class:`~defsentflow.evaluation.task_status.TaskStatus`
    (evaluated | fallback | skipped, with the reason) for the run's data folder."""
    ev = PipelineConfig.model_validate(config).eval
    return task_statuses(ev.tasks, resolve_data_dir(ev.data_dir))


# best-model's stages -> the ``models.method`` values that stage registers under a pipeline run.
STAGE_METHODS: dict[str, tuple[str, ...]] = {
    "pst": ("pst", "defsent", "defsent_plus"),  # the trained encoder: PST's choice, or the one DefSent(+) run
    "pretrain": ("pretrain",),                  # the raw masked-LM encoder (pst_from: pretrain)
    "surrogate": ("surrogate",),
}


def selected_model_dir(config_path: str | os.PathLike, stage: str = "pst") -> str:
    """The encoder directory of ``stage`` in the last finished run of this config (``best-model``).

    ``pst`` is the config's champion (``<name>@champion``, which the promotion gate moves), else the
    trained encoder the run selected (PST's winner, or the model of a ``defsent:`` run); ``pretrain``
    the raw encoder it pretrained; ``surrogate`` the surrogate.

    Raises:
        ValueError: an unknown stage.
        FileNotFoundError: no finished run of the config has such a model (or its files are gone).
    """
    if stage not in STAGE_METHODS:
        raise ValueError(f"stage must be one of {tuple(STAGE_METHODS)}, got {stage!r}")
    cfg = load_config(config_path)
    cat = Catalog(cfg.home, reader=True)  # read-only: never creates the catalog
    if not cat.path.is_file():
        raise FileNotFoundError(f"no completed run of config {cfg.name!r} (no catalog at {cat.path}); "
                                f"run: defsentflow run {config_path}")
    rows = cat.query(
        "SELECT run_id FROM runs WHERE flow = 'pipeline' AND status IN ('completed', 'unchanged') "
        "AND json_extract_string(config, '$.name') = ? ORDER BY ended_at DESC", [cfg.name])
    methods = list(STAGE_METHODS[stage])
    if stage == "pst" and (champion := _champion_dir(cat, cfg.name)):
        return champion
    if stage == "pst" and rows:
        chosen = _selection(cat, rows[0]["run_id"])
        if chosen is not None:  # PST's choice, and only it: never another model of the run
            return chosen
    for r in rows:
        # PST's choice (pst_runs names it by its own id: a candidate, or the untrained base model), the
        # run's own models (the surrogate; pst-<run_id> rows of catalogs before stable ids), and models
        # its stages produced or reused (content-addressed, so shared between runs): a stage row keyed
        # by the model's artifact key.
        hits = cat.query(
            "SELECT m.path, TIMESTAMP '9999-01-01' AS created_at FROM pst_runs AS p JOIN models AS m "
            "ON m.model_id = p.winner_model_id WHERE p.run_id = $run AND $stage = 'pst' "
            "UNION ALL SELECT path, created_at FROM models WHERE run_id = $run AND list_contains($methods, method) "
            "UNION ALL SELECT m.path, s.ended_at FROM stages AS s JOIN models AS m ON m.artifact_key = s.cache_key "
            "WHERE s.run_id = $run AND list_contains($methods, m.method) ORDER BY created_at DESC LIMIT 1",
            {"run": r["run_id"], "methods": methods, "stage": stage})
        found = resolve_model_path(hits[0]["path"]) if hits else None  # a base model is filed by its name
        if found and Path(found).exists():
            return found
    raise FileNotFoundError(f"no completed run of config {cfg.name!r} has a {stage} model; run: defsentflow run {config_path}")


def _champion_dir(cat: Catalog, name: str) -> str | None:
    """The folder of ``<name>@champion`` (None: the config has no champion yet).

    Raises:
        FileNotFoundError: the champion's folder is gone (no other model is named in its place).
    """
    alias = champion_alias(name)
    found = cat.query("SELECT h.model_id, m.path FROM alias_holders AS h LEFT JOIN models AS m USING (model_id) "
                      "WHERE h.alias = ?", [alias]) if _has_aliases(cat) else []
    if not found:
        return None
    folder = resolve_model_path(found[0]["path"]) if found[0]["path"] else None  # a base model is filed by its name
    if folder and Path(folder).is_dir():
        return folder
    raise FileNotFoundError(f"{alias} names {found[0]['model_id']}, but its folder {folder or '(none)'} is gone; "
                            f"`defsentflow rollback {alias}` returns it to the model before")


def _has_aliases(cat: Catalog) -> bool:
    """Whether the catalog has the alias tables (a catalog older than them is read as it is)."""
    return bool(cat.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'alias_holders'"))


def _selection(cat: Catalog, run_id: str) -> str | None:
    """The folder of the model PST selected in ``run_id`` (None: the run has no PST result).

    Raises:
        FileNotFoundError: the selected model is no longer in the catalog or its folder is gone.
    """
    picked = cat.query("SELECT model_id, winner_model_id FROM pst_runs WHERE run_id = ?", [run_id])
    if not picked:
        return None
    model_id = picked[0]["model_id"]
    found = cat.query("SELECT path FROM models WHERE model_id = ? OR model_id = ? ORDER BY model_id = ? DESC",
                      [model_id, picked[0]["winner_model_id"], model_id])
    if found and found[0]["path"] and Path(found[0]["path"]).is_dir():
        return found[0]["path"]
    where = f"its folder {found[0]['path']} is gone" if found and found[0]["path"] else "it is not in the catalog"
    raise FileNotFoundError(f"run {run_id} selected model {model_id}, but {where} (a record refused by "
                            f"`catalog rebuild`? see quarantine/records/); no other model is named in its place")


# -- the sequencer ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PipelineSteps:
    """The pipeline's stages, each a callable the flow wraps as a subflow (or a test as a plain call).

    Signatures: ``ingest_dictionary(section) -> IngestResult``; ``harvest(harvest_config, run_id) -> {"key", "path"}``;
    ``train_surrogate(harvest_config, pairs, run_id) -> {"path", "model_id"}``;
    ``pretrain(section, run_id) -> PretrainOutcome``; ``pst(section, run_id) -> PstResult``;
    ``defsent(section, run_id) -> DefSentResult``; ``evaluate(section, run_id) -> {"model_id", "average"}``;
    ``index(model_dir, dictionary) -> {...}`` (the reverse-dictionary index of the selected model and
    of the untrained one, which ``defsentflow serve`` serves side by side); ``report(run_id) -> {...}``.
    """

    ingest_dictionary: Callable[[dict[str, Any]], Any]
    harvest: Callable[[dict[str, Any], str], dict[str, Any]]
    train_surrogate: Callable[[dict[str, Any], dict[str, Any], str], dict[str, Any]]
    pretrain: Callable[[dict[str, Any], str], Any]
    pst: Callable[[dict[str, Any], str], Any]
    defsent: Callable[[dict[str, Any], str], Any]
    evaluate: Callable[[dict[str, Any], str], dict[str, Any]]
    index: Callable[[str, str], Any]
    report: Callable[[str], Any]


def resolved_config(config_path: str | os.PathLike) -> dict[str, Any]:
    """The validated config as a dict, every source path made absolute (stages may run elsewhere)."""
    cfg = load_config(resolve_path(config_path))
    data = cfg.model_dump(mode="json")
    for s in data["dictionary"]["sources"]:
        s["paths"] = [str(resolve_path(p)) for p in s["paths"]]
    if data.get("harvest"):
        data["harvest"]["corpus"]["paths"] = [str(resolve_path(p)) for p in data["harvest"]["corpus"]["paths"]]
    return data


def training_section(config: dict[str, Any], surrogate: dict[str, Any] | None,
                     pretrained: dict[str, Any] | None) -> dict[str, Any]:
    """The ``pst:`` or ``defsent:`` section with the encoder it starts from (``pst_from``)."""
    section = dict(config["pst"] or config["defsent"])
    if config["pst_from"] == "surrogate":
        section["base_model"] = surrogate["model_dir"]
    elif config["pst_from"] == "pretrain":
        section["base_model"] = pretrained["model_dir"]
    return section


def chosen_combination_seeds(result: Any) -> list[dict[str, Any]]:
    """Every seed's candidate of the chosen combination at every step >= 1 (a ``PstResult``): the
    models DefSent+ Table 2 reports per step (1st, 2nd, 3rd, 3rd-ICA) as mean ± sd over seeds. The
    combination is step 1's chosen candidate's (pooling, entry encoding); later steps keep it, the
    ICA step adds its ICA candidates. [] when no step was trained."""
    first = next((s for s in result.steps if s.step == 1), None)
    if first is None:
        return []
    combo = (first.best.pooling, first.best.entry_encoding)
    return [{"model_dir": c.model_dir, "model_id": c.model_id, "seed": c.seed, "step": c.step, "ica": c.ica}
            for s in result.steps if s.step >= 1 for c in s.candidates if (c.pooling, c.entry_encoding) == combo]


def best_trained(result: Any) -> dict[str, Any] | None:
    """PST's best trained candidate (steps >= 1, by the dev selection score), or None."""
    steps = [s.best for s in result.steps if s.step >= 1]
    if not steps:
        return None
    best = max(steps, key=lambda c: float("-inf") if c.score is None else c.score)
    return {"model_dir": best.model_dir, "model_id": best.model_id, "step": best.step}


def run_pipeline(config_path: str | os.PathLike, *, steps: PipelineSteps, only_if_changed: bool = False,
                 run_id: str | None = None) -> dict[str, Any]:
    """Run the whole pipeline for ``config_path``; returns the run id, the selected model and the report.

    With ``only_if_changed`` (the scheduled retraining) a run whose inputs match the last completed
    run of the same config name ends at once as ``unchanged``. A failure marks the run failed.
    """
    t0 = time.perf_counter()
    preflight(load_config(resolve_path(config_path)), str(config_path))  # a typo is one line, nothing recorded
    config = resolved_config(config_path)
    fingerprint = input_fingerprint(config)
    healed = heal_catalog()  # a lost or emptied catalog is rebuilt from the artifact records first
    if healed:
        print(f"catalog rebuilt from {healed['records']} artifact records")
    cat = Catalog()
    mark_interrupted_runs(cat)
    previous = previous_run(cat, config["name"], fingerprint)
    run_id = run_id or new_run_id(config["name"])
    with cat.recorded_run("pipeline", run_id, config=config, config_hash=fingerprint["key"]) as run:
        if only_if_changed and previous:
            run.status, run.note = "unchanged", f"inputs unchanged since run {previous}: nothing to retrain"
            print(f"run {run_id}: {run.note}")
            kept = record_unchanged(cat, config, run_id, previous)
            return {"run_id": run_id, "status": "unchanged", "note": run.note, "previous": previous,
                    "promotion": kept.to_dict()}
        summary = _stages(config, steps, run_id)
        # the promotion gate: the run's model becomes <name>@champion only when it wins on dev
        summary["promotion"] = gate_run(cat, config, run_id, summary["selected"]).to_dict()
        summary["report"] = steps.report(run_id) if config["report"] else None  # after the gate: it says the decision
        summary["seconds"] = round(time.perf_counter() - t0, 1)
        # the note names files of the root relative to it (a copied root reads its own)
        run.note = json.dumps(relative_tree(cat.root, summary), default=str)[:4000]
    return summary


def _stages(config: dict[str, Any], steps: PipelineSteps, run_id: str) -> dict[str, Any]:
    """Every stage of the run in order; the run's summary (the ``runs`` note of a completed run)."""
    dictionary = steps.ingest_dictionary(config["dictionary"])
    Catalog().record_stage(run_id, "ingest-dictionary", "completed" if dictionary.status == "built" else "cached",
                           cache_key=dictionary.key, seconds=dictionary.seconds if dictionary.status == "built" else None,
                           note=f"{dictionary.status} {dictionary.name}")
    surrogate = None
    if config.get("harvest"):
        pairs = steps.harvest(config["harvest"], run_id)
        if config["train_surrogate"]:
            trained = steps.train_surrogate(config["harvest"], pairs, run_id)
            surrogate = {"model_dir": trained["path"], "model_id": trained["model_id"]}
    pretrained = None
    if config.get("pretrain"):
        outcome = steps.pretrain(config["pretrain"], run_id)
        pretrained = {"model_dir": outcome.model_dir, "model_id": outcome.model_id}
    section = training_section(config, surrogate, pretrained)
    trained, seeds = None, []
    if config["pst"]:
        result = steps.pst(section, run_id)
        selected = {"model_dir": result.model_dir, "model_id": result.model_id, "winner_step": result.winner.step,
                    "reason": result.reason}
        trained = best_trained(result)
        seeds = chosen_combination_seeds(result)
    else:
        result = steps.defsent(section, run_id)
        selected = {"model_dir": result.model_dir, "model_id": result.model_id, "winner_step": 1,
                    "reason": f"{section['method']} (no PST)"}
    plan = evaluation_plan(config, selected, surrogate, section["base_model"], trained, seeds)

    record_run_tasks(run_id, task_plan(config))  # every requested task: a run_tasks row and a log line
    scores = [steps.evaluate(s, run_id) for s in plan]
    if "revdict" in config["eval"]["tasks"]:  # serve the selected model (mode auto: its best dev mode)
        steps.index(selected["model_dir"], config["dictionary"]["name"])
        if section["base_model"] != selected["model_dir"]:  # the untrained encoder, beside it on /revdict
            steps.index(section["base_model"], config["dictionary"]["name"])
    return {"run_id": run_id, "status": "completed",
            "dictionary": dictionary.key,
            "selected": selected, "averages": {s["model_id"]: s["average"] for s in scores}}
