"""Pipeline-level logic shared by the flow and the CLI: fingerprints, run records, evaluation plans.

Prefect-free, like the rest of the library; ``flows/pipeline.py`` only sequences these calls and
the stage flows.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from pathlib import Path
from typing import Any

from defsentflow.config import PipelineConfig, resolve_path
from defsentflow.storage import Catalog, code_version, combine_hashes, hash_config, hash_path
from defsentflow.storage.atomic import pid_alive

__all__ = ["STAGE_METHODS", "baseline_model_id", "input_fingerprint", "start_run", "evaluation_plan", "mark_interrupted_runs", "selected_model_dir"]


def _source_paths(cfg: PipelineConfig) -> list[str]:
    paths = [p for s in cfg.dictionary.sources for p in s.paths]
    if cfg.harvest is not None:
        paths += list(cfg.harvest.corpus.paths)
        if cfg.harvest.pairs.extra_sentences:
            paths.append(cfg.harvest.pairs.extra_sentences)
    return paths


def input_fingerprint(config: dict[str, Any]) -> dict[str, Any]:
    """What a retraining depends on: source contents, the config and the code version."""
    cfg = PipelineConfig.model_validate(config)
    sources = {p: hash_path(resolve_path(p)) for p in _source_paths(cfg)}
    cfg_hash = hash_config(cfg.model_dump(mode="json"))
    return {"sources": sources, "config": cfg_hash, "code_version": code_version(),
            "key": combine_hashes([*sorted(f"{k}={v}" for k, v in sources.items()), cfg_hash, code_version()])}


def mark_interrupted_runs(catalog: Catalog) -> int:
    """Runs still 'running' whose process on this host is gone were killed: mark them 'interrupted'."""
    host = socket.gethostname()
    n = 0
    for r in catalog.query("SELECT run_id, note FROM runs WHERE status = 'running' AND flow = 'pipeline'"):
        try:
            owner = json.loads(r["note"] or "{}")
        except json.JSONDecodeError:
            continue
        if owner.get("host") == host and isinstance(owner.get("pid"), int) and not pid_alive(owner["pid"]):
            catalog.end_run(r["run_id"], "interrupted", flow="pipeline")
            n += 1
    return n


def start_run(config: dict[str, Any], fingerprint: dict[str, Any], *, only_if_changed: bool = False,
              run_id: str | None = None) -> dict[str, Any]:
    """Open the pipeline's run record.

    With ``only_if_changed`` (the scheduled retraining), a completed or unchanged run of the same
    config name that saw the same fingerprint ends this run at once as 'unchanged'.
    """
    cat = Catalog()
    mark_interrupted_runs(cat)
    name = config["name"]
    previous = cat.query(
        "SELECT run_id FROM runs WHERE flow = 'pipeline' AND status = 'completed' AND config_hash = ? "
        "AND json_extract_string(config, '$.name') = ? ORDER BY ended_at DESC LIMIT 1",
        [fingerprint["key"], name],
    )
    run_id = run_id or f"{name}-{uuid.uuid4().hex[:8]}"
    cat.start_run("pipeline", config=config, config_hash=fingerprint["key"], run_id=run_id)
    cat.execute("UPDATE runs SET note = ? WHERE run_id = ?",
                [json.dumps({"pid": os.getpid(), "host": socket.gethostname()}), run_id])
    if only_if_changed and previous:
        note = f"inputs unchanged since run {previous[0]['run_id']}: nothing to retrain"
        cat.end_run(run_id, "unchanged", note=note, flow="pipeline")
        return {"run_id": run_id, "unchanged": True, "note": note, "previous": previous[0]["run_id"]}
    return {"run_id": run_id, "unchanged": False, "note": None}


def baseline_model_id(base_model: str) -> str:
    """The catalog id the untrained baseline's scores are filed under (``base:<name>``)."""
    return "base:all-MiniLM-L6-v2" if base_model == "minilm" else f"base:{Path(str(base_model)).name}"


def evaluation_plan(config: dict[str, Any], selected: dict[str, Any], surrogate: dict[str, Any] | None,
                    base_model: str, trained: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Evaluate sections for the selected encoder and the baselines, restricted to available data.

    ``base_model`` is the encoder PST started from (the configured one, the surrogate, or the
    pretrained raw encoder): the "untrained" baseline. ``trained`` (``model_dir``, ``model_id``)
    is PST's best trained candidate; with ``eval.best_trained`` it is evaluated under its own id
    too (free when it is the selected model: the evaluation is cached by content).
    """
    from defsentflow.evaluation.sts_data import available_tasks
    from defsentflow.training.pst_config import resolve_data_dir

    cfg = PipelineConfig.model_validate(config)
    ev = cfg.eval
    data_dir = resolve_data_dir(ev.data_dir)
    present = set(available_tasks(data_dir)) if data_dir else set()
    tasks = [t for t in ev.tasks if t in ("revdict", "wordpred") or t in present]
    common = {"tasks": tasks, "data_dir": str(data_dir) if data_dir else None, "dictionary": cfg.dictionary.name,
              "revdict_max_queries": ev.revdict_max_queries, "revdict_candidates": ev.revdict_candidates,
              "revdict_modes": list(ev.revdict_modes), "revdict_splits": list(ev.revdict_splits),
              "revdict_protocols": list(ev.revdict_protocols),
              "autocast": ev.autocast, "cache": ev.cache}
    plan = [{**common, "model": selected["model_dir"], "model_id": selected["model_id"], "pooling": ev.pooling}]
    if ev.best_trained and trained:
        plan.append({**common, "model": trained["model_dir"], "model_id": trained["model_id"], "pooling": ev.pooling})
    base = base_model
    base_id = baseline_model_id(base)
    if "untrained" in ev.baselines:
        plan.append({**common, "model": base, "model_id": base_id, "pooling": ev.pooling})
    if "sbert_wk" in ev.baselines:
        plan.append({**common, "tasks": [t for t in tasks if t not in ("revdict", "wordpred")] or tasks, "model": base,
                     "model_id": f"{base_id}+sbert_wk", "pooling": "sbert_wk"})
    if "surrogate" in ev.baselines and surrogate:
        plan.append({**common, "model": surrogate["model_dir"], "model_id": surrogate["model_id"], "pooling": "mean"})
    return [p for p in plan if p["tasks"]]


# best-model's stages -> the ``models.method`` values that stage registers under a pipeline run.
STAGE_METHODS: dict[str, tuple[str, ...]] = {
    "pst": ("pst", "defsent", "defsent_plus"),  # the trained encoder: PST's choice, or the one DefSent(+) run
    "pretrain": ("pretrain",),                  # the raw masked-LM encoder (pst_from: pretrain)
    "surrogate": ("surrogate",),
}


def selected_model_dir(config_path: str | os.PathLike, stage: str = "pst") -> str:
    """The encoder directory of ``stage`` in the last finished run of this config (``best-model``).

    ``pst`` is the trained encoder the run selected (PST's winner, or the model of a ``defsent:``
    run); ``pretrain`` the raw encoder it pretrained; ``surrogate`` the surrogate.

    Raises:
        ValueError: an unknown stage.
        FileNotFoundError: no finished run of the config has such a model (or its files are gone).
    """
    from defsentflow.config import load_config

    if stage not in STAGE_METHODS:
        raise ValueError(f"stage must be one of {tuple(STAGE_METHODS)}, got {stage!r}")
    cfg = load_config(config_path)
    cat = Catalog(cfg.home)
    rows = cat.query(
        "SELECT run_id FROM runs WHERE flow = 'pipeline' AND status IN ('completed', 'unchanged') "
        "AND json_extract_string(config, '$.name') = ? ORDER BY ended_at DESC", [cfg.name])
    methods = list(STAGE_METHODS[stage])
    for r in rows:
        # The run's own models (PST's pst-<run_id>, the surrogate), and models its stages produced or
        # reused (content-addressed, so shared between runs): a stage row keyed by the model's artifact key.
        hits = cat.query(
            "SELECT path, created_at FROM models WHERE run_id = $run AND list_contains($methods, method) "
            "UNION ALL SELECT m.path, s.ended_at FROM stages AS s JOIN models AS m ON m.artifact_key = s.cache_key "
            "WHERE s.run_id = $run AND list_contains($methods, m.method) ORDER BY created_at DESC LIMIT 1",
            {"run": r["run_id"], "methods": methods})
        if hits and Path(hits[0]["path"]).exists():
            return hits[0]["path"]
    raise FileNotFoundError(f"no completed run of config {cfg.name!r} has a {stage} model; run: defsentflow run {config_path}")
