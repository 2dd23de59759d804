"""The ``pipeline`` flow: ingest dictionary -> (ingest corpus -> harvest pairs -> train surrogate)
-> (pretrain) -> PST or DefSent -> evaluate -> report.

The sequence and every decision (the encoder PST starts from, the best trained candidate, what is
evaluated) are the library's :func:`defsentflow.pipeline.run_pipeline`; this flow hands it the
stage flows as subflows. Every stage is cached by its inputs' content, its config section and the
code version, so a re-run recomputes only what is missing, and a run killed at any point finishes
on the next call (training resumes from its last checkpoint). With ``only_if_changed`` (the
scheduled retraining) a run whose inputs match the last completed run ends at once as "unchanged".
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.compute import shared_paths
from defsentflow.config import load_config, resolve_path
from defsentflow.flows.evaluate import evaluate_flow
from defsentflow.flows.harvest_pairs import run_harvest_flow
from defsentflow.flows.ingest_dictionary import ingest_dictionary_flow
from defsentflow.flows.pretrain import pretrain_flow
from defsentflow.flows.pst import pst_flow
from defsentflow.flows.revdict import revdict_index
from defsentflow.flows.train_defsent import train_defsent_flow
from defsentflow.pipeline import PipelineSteps, run_pipeline
from defsentflow.storage import data_root
from defsentflow.tasks.cluster import compute_cluster
from defsentflow.tasks.harvest import train_surrogate_encoder
from defsentflow.tasks.report import write_run_report


def _steps() -> Any:
    return PipelineSteps(
        ingest_dictionary=lambda d: ingest_dictionary_flow(d),
        harvest=lambda cfg, run_id: run_harvest_flow(cfg, run_id=run_id),
        train_surrogate=lambda cfg, pairs, run_id: train_surrogate_encoder(
            cfg, {"key": pairs["key"], "path": pairs["path"]}, run_id),
        pretrain=lambda section, run_id: pretrain_flow(section, run_id=run_id),
        pst=lambda section, run_id: pst_flow(section, run_id=run_id),
        defsent=lambda section, run_id: train_defsent_flow(section, run_id=run_id),
        evaluate=lambda section, run_id: evaluate_flow(section, run_id=run_id),
        index=lambda model_dir, dictionary: revdict_index(model_dir, dictionary, "auto", None),
        # the report is the last step: it shows the status the run ends with just after
        report=lambda run_id: write_run_report(run_id, status="completed"),
    )


@flow(name="pipeline", log_prints=True)
def pipeline(config_path: str, only_if_changed: bool = False, run_id: str | None = None) -> dict[str, Any]:
    """Run the whole pipeline for ``config_path``; returns the run id, the selected model and the report."""
    cfg = load_config(resolve_path(config_path))
    with compute_cluster(cfg.compute, needs=shared_paths(cfg, data_root())):  # the command's cluster, if it has one
        return run_pipeline(config_path, steps=_steps(), only_if_changed=only_if_changed, run_id=run_id)
