"""The ``pipeline`` flow: ingest dictionary -> (ingest corpus -> harvest pairs -> train surrogate)
-> PST -> evaluate -> report.

One YAML config describes a run. Every stage is a cached subflow or task keyed by its inputs'
content hashes, its config section and the code version, so a re-run recomputes only what is
missing, and a run killed at any point finishes on the next call (training resumes from its last
checkpoint). With ``only_if_changed`` (the scheduled retraining) a run whose inputs match the last
completed run of the same config name ends at once as "unchanged".
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow

from flows.evaluate import evaluate_flow
from flows.ingest_dictionary import ingest_dictionary
from flows.pst import pst_flow
from tasks.pipeline import evaluation_plan, finish_pipeline_run, input_fingerprint, start_pipeline_run
from tasks.report import write_run_report


def _resolved(cfg: Any) -> dict[str, Any]:
    """The config as a dict, with every source path made absolute (flows may run elsewhere)."""
    from defsentflow.config import resolve_path

    data = cfg.model_dump(mode="json")
    for s in data["dictionary"]["sources"]:
        s["paths"] = [str(resolve_path(p)) for p in s["paths"]]
    if data.get("harvest"):
        data["harvest"]["corpus"]["paths"] = [str(resolve_path(p)) for p in data["harvest"]["corpus"]["paths"]]
    return data


@flow(name="pipeline", log_prints=True)
def pipeline(config_path: str, only_if_changed: bool = False, run_id: str | None = None) -> dict[str, Any]:
    """Run the whole pipeline for ``config_path``; returns the run id, the selected model and the report."""
    from defsentflow.config import load_config, resolve_path

    t0 = time.perf_counter()
    cfg = load_config(resolve_path(config_path))
    config = _resolved(cfg)
    fingerprint = input_fingerprint(config)
    run = start_pipeline_run(config, fingerprint, only_if_changed, run_id)
    run_id = run["run_id"]
    if run["unchanged"]:
        print(f"run {run_id}: {run['note']}")
        return {"run_id": run_id, "status": "unchanged", "note": run["note"]}
    try:
        d = config["dictionary"]
        dictionary = ingest_dictionary(d["name"], d["sources"], d["variant"], d["tokenizer"], d["seed"],
                                       d["case_fold"], d["max_chars"], d["workers"])
        surrogate = None
        if config.get("harvest"):
            from flows.harvest_pairs import run_harvest_flow
            from flows.train_surrogate import train_surrogate_flow

            run_harvest_flow(config["harvest"], run_id=run_id)
            if config["train_surrogate"]:
                trained = train_surrogate_flow(config["harvest"], run_id=run_id)
                surrogate = {"model_dir": trained["path"], "model_id": trained["model_id"]}
        pretrained = None
        if config.get("pretrain"):
            from flows.pretrain import pretrain_flow

            outcome = pretrain_flow(config["pretrain"], run_id=run_id)
            pretrained = {"model_dir": outcome.model_dir, "model_id": outcome.model_id}
        section = dict(config["pst"] or config["defsent"])
        if config["pst_from"] == "surrogate":
            section["base_model"] = surrogate["model_dir"]
        elif config["pst_from"] == "pretrain":
            section["base_model"] = pretrained["model_dir"]
        trained = None
        if config["pst"]:
            result = pst_flow(section, run_id=run_id)
            selected = {"model_dir": result.model_dir, "model_id": result.model_id, "winner_step": result.winner.step,
                        "reason": result.reason}
            steps = [s.best for s in result.steps if s.step >= 1]
            if steps:
                best = max(steps, key=lambda c: float("-inf") if c.score is None else c.score)
                trained = {"model_dir": best.model_dir, "model_id": best.model_id, "step": best.step}
        else:
            from flows.train_defsent import train_defsent_flow

            result = train_defsent_flow(section, run_id=run_id)
            selected = {"model_dir": result.model_dir, "model_id": result.model_id, "winner_step": 1,
                        "reason": f"{section['method']} (no PST)"}
        plan = evaluation_plan(config, selected, surrogate, section["base_model"], trained)
        scores = [evaluate_flow(section, run_id=run_id) for section in plan]
        # the report is the last step: it shows the status the run ends with just below
        report = write_run_report(run_id, status="completed") if config["report"] else None
    except BaseException as exc:
        finish_pipeline_run(run_id, "failed", {"error": f"{type(exc).__name__}: {exc}"})
        raise
    summary = {"run_id": run_id, "status": "completed", "dictionary": dictionary.get("key") if isinstance(dictionary, dict) else None,
               "selected": selected, "averages": {s["model_id"]: s["average"] for s in scores},
               "report": report, "seconds": round(time.perf_counter() - t0, 1)}
    finish_pipeline_run(run_id, "completed", summary)
    return summary
