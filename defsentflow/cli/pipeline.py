"""``defsentflow run CONFIG`` (the whole pipeline) and ``defsentflow best-model CONFIG``."""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

from defsentflow.cli.compute import add_compute_flags


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the whole pipeline for a config (no Prefect server needed)")
    p.add_argument("config", help="pipeline YAML, e.g. configs/demo.yaml")
    p.add_argument("--only-if-changed", action="store_true",
                   help="end at once as 'unchanged' when the inputs match the last completed run of this config")
    add_compute_flags(p)
    p.set_defaults(func=_run)
    p = sub.add_parser("best-model", help="print the encoder directory a finished run of CONFIG selected")
    p.add_argument("config")
    p.add_argument("--stage", default="pst", choices=["pst", "pretrain", "surrogate"],
                   help="pst: the selected trained encoder (PST's choice or the defsent: run's model; default); "
                        "pretrain: the raw pretrained encoder; surrogate: the surrogate")
    p.set_defaults(func=_best_model)


def _prepare_env(config_path: str):
    """Validate the config before starting anything; the validated config."""
    from defsentflow.config import load_config, resolve_path

    cfg = load_config(resolve_path(config_path))
    if cfg.home and not os.environ.get("DEFSENTFLOW_HOME"):
        os.environ["DEFSENTFLOW_HOME"] = str(Path(cfg.home).resolve())
    return cfg


def _failed_stage(run_id: str) -> str | None:
    from defsentflow.storage import Catalog

    try:
        rows = Catalog().query("SELECT stage FROM stages WHERE run_id = ? AND status = 'failed' "
                               "ORDER BY started_at DESC LIMIT 1", [run_id])
    except Exception:  # noqa: BLE001 - the error line goes out without the stage
        return None
    return rows[0]["stage"] if rows else None


def _run(args: argparse.Namespace) -> int:
    import uuid

    from defsentflow.cli import UserError
    from defsentflow.cli.compute import command_runtime, compute_for
    from defsentflow.cli.run_log import elapsed, run_log
    from defsentflow.compute import shared_paths
    from defsentflow.preflight import preflight
    from defsentflow.storage import Catalog, check_identifier, clean_stale_temporaries, data_root, under_root

    cfg = _prepare_env(args.config)
    preflight(cfg, args.config)  # paths exist and are of their kind, before anything starts
    name = cfg.name
    run_id = check_identifier(f"{name}-{uuid.uuid4().hex[:8]}", "run id")
    root = data_root()
    log_path = under_root(root, "logs", f"{run_id}.log")
    with run_log(log_path, verbose=getattr(args, "verbose", False)) as log:
        log.info(f"run {run_id}: {args.config}; full log: {log_path}")
        from defsentflow.flows.pipeline import pipeline

        clean_stale_temporaries(root)
        try:
            with command_runtime(compute_for(args, cfg.compute), shared_paths(cfg, root)):
                state = pipeline(args.config, only_if_changed=args.only_if_changed, run_id=run_id, return_state=True)
                _print_task_states(state.state_details.flow_run_id, log)
                result = state.result()
        except Exception as exc:  # noqa: BLE001 - one line here, the traceback is in the log (and with -v above)
            stage = _failed_stage(run_id) or log.failed_task
            cause = " ".join(str(exc).split()) or type(exc).__name__
            where = f"stage {stage}: " if stage else ""
            message = (f"run {run_id} failed after {elapsed(time.monotonic() - log.started)}: {where}"
                       f"{type(exc).__name__}: {cause}; full log: {log_path}")
            logging.getLogger("defsentflow.run").error(message, exc_info=exc, extra={"terminal": False})
            raise UserError(message) from exc
        log.info("")
        log.info(f"run:      {result['run_id']} ({result['status']}) in {elapsed(time.monotonic() - log.started)}")
        if result.get("selected"):
            sel = result["selected"]
            log.info(f"selected: {sel['model_dir']} (step {sel['winner_step']})")
        if result.get("report"):
            rep = result["report"]
            log.info(f"report:   {rep.get('html_path') or rep.get('markdown_path') or rep}")
        log.info(f"scores:   defsentflow leaderboard   (catalog: {Catalog().path}; defsentflow sql \"SELECT ...\")")
        log.info(f"log:      {log_path}")
    return 0


def _print_task_states(flow_run_id, log) -> None:
    """List every stage of this run with its final state, so the log says what was cached."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    def task_runs(ids):
        from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterFlowRunId

        with get_client(sync_client=True) as client:
            return client.read_task_runs(task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=ids)))

    try:
        ids = [flow_run_id]
        frontier = [flow_run_id]
        with get_client(sync_client=True) as client:
            while frontier:  # subflows, recursively
                children = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)))
                frontier = [c.id for c in children]
                ids += frontier
        runs = task_runs(ids)
    except Exception as exc:  # noqa: BLE001 - the listing is informational
        log.info(f"(could not list task states: {exc})")
        return
    runs = [r for r in runs if r.state is not None]
    runs.sort(key=lambda r: r.start_time or r.expected_start_time or r.created)
    cached = sum(1 for r in runs if r.state.name == "Cached")
    log.info(f"\nstages: {len(runs)} task runs, {cached} cached, {len(runs) - cached} ran "
             "(run records, plans and subflow runs always run; work stages show Cached when reused)")
    for r in runs:
        log.info(f"  {r.state.name:<10} {r.name}")
    failed = [r.name for r in runs if r.state.name == "Failed"]
    log.failed_task = failed[-1] if failed else None  # the innermost: it started last


def _best_model(args: argparse.Namespace) -> int:
    from defsentflow.pipeline import selected_model_dir

    print(selected_model_dir(args.config, stage=args.stage))
    return 0
