"""``defsentflow run CONFIG`` (the whole pipeline) and ``defsentflow best-model CONFIG``."""

from __future__ import annotations

import argparse
import os
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


def _prepare_env(config_path: str) -> None:
    from defsentflow.config import load_config, resolve_path

    cfg = load_config(resolve_path(config_path))  # validate before starting anything
    if cfg.home and not os.environ.get("DEFSENTFLOW_HOME"):
        os.environ["DEFSENTFLOW_HOME"] = str(Path(cfg.home).resolve())


def _run(args: argparse.Namespace) -> int:
    _prepare_env(args.config)
    from flows.pipeline import pipeline
    from flows.runtime import local_api
    from defsentflow.storage import Catalog, clean_stale_temporaries, data_root

    clean_stale_temporaries(data_root())
    from defsentflow.cli.compute import command_cluster
    from defsentflow.config import load_config, resolve_path

    with local_api(), command_cluster(args, load_config(resolve_path(args.config)).compute):
        state = pipeline(args.config, only_if_changed=args.only_if_changed, return_state=True)
        result = state.result()
        _print_task_states(state.state_details.flow_run_id)
    root = data_root()
    print()
    print(f"run:      {result['run_id']} ({result['status']})")
    if result.get("selected"):
        sel = result["selected"]
        print(f"selected: {sel['model_dir']} (step {sel['winner_step']}: {sel['reason']})")
    if result.get("report"):
        rep = result["report"]
        print(f"report:   {rep.get('html_path') or rep.get('markdown_path') or rep}")
    print(f"catalog:  {Catalog().path}   scores: defsentflow leaderboard")
    print(f"data:     {root}")
    return 0


def _print_task_states(flow_run_id) -> None:
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
        print(f"(could not list task states: {exc})")
        return
    runs = [r for r in runs if r.state is not None]
    runs.sort(key=lambda r: r.start_time or r.expected_start_time or r.created)
    cached = sum(1 for r in runs if r.state.name == "Cached")
    print(f"\nstages: {len(runs)} task runs, {cached} cached, {len(runs) - cached} ran "
          "(run records, plans and subflow runs always run; work stages show Cached when reused)")
    for r in runs:
        print(f"  {r.state.name:<10} {r.name}")


def _best_model(args: argparse.Namespace) -> int:
    from defsentflow.pipeline import selected_model_dir

    print(selected_model_dir(args.config, stage=args.stage))
    return 0
