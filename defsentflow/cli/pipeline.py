"""``defsentflow run CONFIG`` (the whole pipeline) and ``defsentflow best-model CONFIG``."""

from __future__ import annotations

import argparse
import logging
import time

from defsentflow.cli.compute import add_compute_flags
from defsentflow.cli.home import use_data_root


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

    path = resolve_path(config_path)
    cfg = load_config(path)
    use_data_root(cfg.home, path)
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
    from defsentflow.cli import UserError
    from defsentflow.cli.compute import command_cluster
    from defsentflow.pipeline import log_path, new_run_id
    from defsentflow.preflight import preflight
    from defsentflow.run_log import elapsed, run_log
    from defsentflow.run_summary import summary_lines
    from defsentflow.storage import clean_stale_temporaries, data_root

    cfg = _prepare_env(args.config)
    preflight(cfg, args.config)  # paths exist and are of their kind, before anything starts
    run_id = new_run_id(cfg.name)
    root = data_root()
    path = log_path(run_id)
    with run_log(path, verbose=getattr(args, "verbose", False)) as log:
        log.info(f"run {run_id}: {args.config}; full log: {path}")
        from defsentflow.flows.pipeline import pipeline
        from defsentflow.flows.runtime import local_api

        clean_stale_temporaries(root)
        try:
            with local_api(), command_cluster(args, cfg.compute):
                state = pipeline(args.config, only_if_changed=args.only_if_changed, run_id=run_id, return_state=True)
                if state.is_failed() or state.is_crashed():
                    log.failed_task = _failed_task(state.state_details.flow_run_id)
                result = state.result()
        except Exception as exc:  # noqa: BLE001 - one line here, the traceback is in the log (and with -v above)
            stage = _failed_stage(run_id) or log.failed_task
            cause = " ".join(str(exc).split()) or type(exc).__name__
            where = f"stage {stage}: " if stage else ""
            message = (f"run {run_id} failed after {elapsed(time.monotonic() - log.started)}: {where}"
                       f"{type(exc).__name__}: {cause}; full log: {path}")
            logging.getLogger("defsentflow.run").error(message, exc_info=exc, extra={"terminal": False})
            raise UserError(message) from exc
        for line in summary_lines(result, seconds=time.monotonic() - log.started, log_path=path):
            log.info(line)
    return 0


def _failed_task(flow_run_id) -> str | None:
    """The innermost failed Prefect task run of a failed flow run (it started last), or None."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
        TaskRunFilter,
        TaskRunFilterFlowRunId,
    )

    try:
        ids, frontier = [flow_run_id], [flow_run_id]
        with get_client(sync_client=True) as client:
            while frontier:  # subflows, recursively
                children = client.read_flow_runs(
                    flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)))
                frontier = [c.id for c in children]
                ids += frontier
            runs = client.read_task_runs(task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=ids)))
    except Exception:  # noqa: BLE001 - the error line goes out without the task's name
        return None
    failed = sorted((r for r in runs if r.state is not None and r.state.name == "Failed"),
                    key=lambda r: r.start_time or r.expected_start_time or r.created)
    return failed[-1].name if failed else None


def _best_model(args: argparse.Namespace) -> int:
    from defsentflow.pipeline import selected_model_dir

    print(selected_model_dir(args.config, stage=args.stage))
    return 0
