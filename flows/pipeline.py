"""The ``pipeline`` flow: ingest dictionary -> (ingest corpus -> harvest pairs -> train surrogate)
-> (pretrain) -> PST or DefSent -> evaluate -> report.

The sequence and every decision (the encoder PST starts from, the best trained candidate, what is
evaluated) are the library's :func:`defsentflow.pipeline.run_pipeline`; this flow hands it the
stage flows as subflows. Every stage is cached by its inputs' content, its config section and the
code version, so a re-run recomputes only what is missing, and a run killed at any point finishes
on the next call (training resumes from its last checkpoint). With ``only_if_changed`` (the
scheduled retraining) a run whose inputs match the last completed run ends at once as "unchanged".
A run that did no work ends in a ``Completed`` state named ``Unchanged`` or ``Reused``, tagged the same
(:func:`final_state`), so the UI tells it from a run that trained.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Any

from prefect import flow
from prefect.states import Completed

from defsentflow.compute import shared_paths
from defsentflow.config import load_config
from defsentflow.config_tools import resolve_config
from defsentflow.flows.evaluate import evaluate_flow
from defsentflow.flows.harvest_pairs import run_harvest_flow
from defsentflow.flows.ingest_dictionary import ingest_dictionary_flow
from defsentflow.flows.pretrain import pretrain_flow
from defsentflow.flows.pst import pst_flow
from defsentflow.flows.revdict import revdict_index
from defsentflow.flows.train_defsent import train_defsent_flow
from defsentflow.pipeline import PipelineSteps, log_path, new_run_id, run_pipeline
from defsentflow.run_log import is_open, run_log
from defsentflow.run_summary import OUTCOMES, run_outcome, summary_lines
from defsentflow.storage.paths import choose_data_root
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
    """Run the whole pipeline for ``config_path``; returns the run id, the selected model and the report.

    The run's log goes to ``<data root>/logs/RUN_ID.log`` (``defsentflow run`` opens it first and
    prints the closing lines itself; a deployment run opens it here and prints them into it).
    """
    t0 = time.monotonic()
    path = resolve_config(config_path)  # a file, or a config shipped in the package ('demo')
    cfg = load_config(path)
    root, how = choose_data_root(cfg.home, path)  # the CLI's rule, so a deployment run uses the CLI's root
    os.environ["DEFSENTFLOW_HOME"] = str(root)
    run_id = run_id or new_run_id(cfg.name)
    log = log_path(run_id)
    own = not is_open(log)  # a deployment run: nobody else writes this run's log
    with run_log(log, terminal=False) if own else contextlib.nullcontext(), \
            compute_cluster(cfg.compute, needs=shared_paths(cfg, root)):  # the command's cluster, if it has one
        if own:
            print(f"run {run_id}: {config_path}; data root: {root} ({how}); full log: {log}")
        result = run_pipeline(path, steps=_steps(), only_if_changed=only_if_changed, run_id=run_id)
        if own:
            print("\n".join(summary_lines(result, seconds=time.monotonic() - t0, log_path=log)))
    return final_state(result)


def final_state(result: dict[str, Any]) -> Any:
    """The flow run's end: ``result`` as is (``Completed``), or, for a run that did no work
    (:func:`~defsentflow.run_summary.run_outcome`), a ``Completed`` state named after the outcome
    (``Unchanged``, ``Reused``) and the tag of the same word on the flow run, which the UI's tag
    filter and ``prefect flow-run ls --state Unchanged`` find. ``result`` stays the state's value."""
    outcome = run_outcome(result)
    if outcome is None:
        return result
    try:
        tag_flow_run(outcome)
    except Exception as exc:  # noqa: BLE001 - the work is done; the state's name still says it
        logging.getLogger(__name__).warning("could not tag the flow run %r: %s", outcome, exc)
    return Completed(name=outcome.capitalize(), message=OUTCOMES[outcome], data=result)


def tag_flow_run(*tags: str) -> None:
    """Add ``tags`` to the running flow run (its tags are set when the run is created; an outcome is
    known only at its end)."""
    from prefect.client.orchestration import get_client  # lazy: only a run that did no work is tagged
    from prefect.runtime import flow_run  # lazy: as above

    with get_client(sync_client=True) as client:
        client.update_flow_run(flow_run.id, tags=sorted({*flow_run.tags, *tags}))
