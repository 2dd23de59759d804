"""The ``pipeline`` flow: ingest dictionary -> (ingest corpus -> harvest pairs -> train surrogate)
-> (pretrain) -> PST or DefSent -> evaluate -> report.

The sequence and every decision (the encoder PST starts from, the best trained candidate, what is
evaluated) are the library's :func:`defsentflow.pipeline.run_pipeline`; this flow hands it the
stage flows as subflows. Every stage is cached by its inputs' content, its config section and the
code version, so a re-run recomputes only what is missing, and a run killed at any point finishes
on the next call (training resumes from its last checkpoint). With ``only_if_changed`` (the
scheduled retraining) a run whose inputs match the last completed run ends at once as "unchanged".
After every completed run the promotion gate (:mod:`defsentflow.registry.gate`) decides whether its
model becomes ``<name>@champion``. The run ends in a ``Completed`` state named after its most telling
outcome (``Unchanged``, ``Promoted``, ``Not comparable``, ``Reused``, ``Kept``), tagged with every
one (:func:`final_state`), so the UI tells a run that did no work or kept the champion from one that
shipped a model; the gate's decision with both figures is a Prefect artifact (``promotion-<alias>``).
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
from defsentflow.registry import markdown
from defsentflow.run_log import is_open, run_log
from defsentflow.run_summary import OUTCOMES, run_outcomes, summary_lines
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
    """The flow run's end: ``result`` as is (``Completed``), or, for a run with an outcome
    (:func:`~defsentflow.run_summary.run_outcomes`: it did no work, or the promotion gate decided), a
    ``Completed`` state named after the first (``Unchanged``, ``Promoted``, ``Not comparable``,
    ``Reused``, ``Kept``) and every outcome as a tag of the flow run, which the UI's tag filter and
    ``prefect flow-run ls --state Kept`` find; the gate's decision is also a Prefect artifact.
    ``result`` stays the state's value."""
    outcomes = run_outcomes(result)
    if not outcomes:
        return result
    for say, what in ((lambda: tag_flow_run(*outcomes), "tag the flow run"),
                      (lambda: publish_promotion(result.get("promotion")), "publish the promotion artifact")):
        try:
            say()
        except Exception as exc:  # the work is done; the state's name still says it
            logging.getLogger(__name__).warning("could not %s (%s): %s", what, ", ".join(outcomes), exc)
    promotion = result.get("promotion") or {}
    message = promotion.get("reason") if promotion.get("decision") == outcomes[0] else OUTCOMES[outcomes[0]]
    return Completed(name=outcomes[0].replace("-", " ").capitalize(), message=message, data=result)


def publish_promotion(promotion: dict[str, Any] | None) -> None:
    """The gate's decision with both figures as a Markdown artifact keyed by the alias (its versions in
    the UI are the alias's decisions, newest first)."""
    if not promotion or promotion.get("decision") == "unchanged":
        return
    from prefect.artifacts import create_markdown_artifact  # lazy: as tag_flow_run's imports

    key = "promotion-" + "".join(c if c.isalnum() else "-" for c in promotion["alias"].lower())
    create_markdown_artifact(markdown=markdown(promotion), key=key,
                             description=f"{promotion['alias']}: {promotion['decision']}"[:500])


def tag_flow_run(*tags: str) -> None:
    """Add ``tags`` to the running flow run (its tags are set when the run is created; an outcome is
    known only at its end)."""
    from prefect.client.orchestration import get_client  # lazy: only a run with an outcome is tagged
    from prefect.runtime import flow_run  # lazy: as above

    with get_client(sync_client=True) as client:
        client.update_flow_run(flow_run.id, tags=sorted({*flow_run.tags, *tags}))
