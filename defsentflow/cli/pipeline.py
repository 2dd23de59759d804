"""``defsentflow run CONFIG`` (the whole pipeline) and ``defsentflow best-model CONFIG``."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

from defsentflow.cli.compute import add_compute_flags
from defsentflow.cli.home import use_data_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the whole pipeline for a config (no Prefect server needed)")
    p.add_argument("config", help="pipeline YAML (configs/demo.yaml), or a config shipped in the package: demo")
    p.add_argument("--only-if-changed", action="store_true",
                   help="end at once as 'unchanged' when the inputs match the last completed run of this config")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config value for this run, e.g. --set pst.steps=1 --set pst.max_train_entries=200 "
                        "(a dotted key, a YAML value; the config as run is written to <data root>/configs/)")
    add_compute_flags(p)
    p.set_defaults(func=_run)
    p = sub.add_parser("best-model", help="print the encoder directory a finished run of CONFIG selected")
    p.add_argument("config")
    p.add_argument("--stage", default="pst", choices=["pst", "pretrain", "surrogate"],
                   help="pst: the selected trained encoder (PST's choice or the defsent: run's model; default); "
                        "pretrain: the raw pretrained encoder; surrogate: the surrogate")
    p.set_defaults(func=_best_model)


def _prepare_env(config_path: str, overrides: list[str] | None = None) -> tuple[Any, Path]:
    """Validate the config (with ``--set`` overrides) before starting anything; the validated config
    and the file the run reads (with overrides: the config as run, written under the data root)."""
    from defsentflow.config_tools import read_yaml_mapping, resolve_config
    from defsentflow.preflight import check_model_names

    path = resolve_config(config_path)  # a file, or a config shipped in the package (`run demo`)
    check_model_names(overridden(path, overrides) if overrides else read_yaml_mapping(path, what="config"),
                      str(config_path))  # before validation imports torch: a typo in base_model fails at once
    from defsentflow.config import config_from_dict, load_config

    cfg = load_config(path)
    if overrides:
        cfg = config_from_dict(overridden(path, overrides), origin=f"{config_path} with --set")
    use_data_root(cfg.home, path)
    if overrides:
        path = write_config_as_run(cfg, path)
    return cfg, path


def overridden(path: Path, overrides: list[str]) -> dict[str, Any]:
    """The config file's mapping with each ``KEY=VALUE`` set (``KEY`` dotted, ``VALUE`` YAML) and its
    input paths made absolute (the config as run is read from another folder)."""
    import yaml

    from defsentflow.config_tools import all_finite, load_yaml_text, read_yaml_mapping, resolve_path, set_dotted
    from defsentflow.limits import LIMITS

    data = read_yaml_mapping(path, what="config")
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        shown = f"--set {item[:60]!r}" + ("..." if len(item) > 60 else "")
        if not sep or not key:
            raise ValueError(f"{shown}: expected KEY=VALUE (a dotted key, e.g. pst.steps=1)")
        if key.count(".") >= LIMITS["nesting"] or any(not part for part in key.split(".")):
            raise ValueError(f"{shown}: the key is not a dotted key of at most {LIMITS['nesting']} parts")
        try:  # the same reader as a config file: safe types, no duplicate keys, bounded aliases and nesting
            parsed = load_yaml_text(value)
        except yaml.YAMLError as exc:
            raise ValueError(f"{shown}: the value is not valid YAML: {' '.join(str(exc).split())[:200]}") from None
        if not all_finite(parsed):
            raise ValueError(f"{shown}: the value holds NaN or infinity; a config takes finite numbers only")
        data = set_dotted(data, key, parsed)
    for source in (data.get("dictionary") or {}).get("sources") or []:
        if isinstance(source, dict) and isinstance(source.get("paths"), list):
            source["paths"] = [str(resolve_path(p, must_exist=False)) for p in source["paths"]]
    return data


def write_config_as_run(cfg: Any, origin: Path) -> Path:
    """``<data root>/configs/<name>-<hash>.yaml``: the validated config with its overrides (content-named:
    the same overrides, the same file)."""
    import yaml

    from defsentflow.storage import atomic_path, check_identifier, data_root, hash_config, root_place

    data = cfg.model_dump(mode="json", exclude_unset=True)
    out = root_place(data_root(), "configs", f"{check_identifier(cfg.name, 'config name')}-{hash_config(data)[:8]}.yaml")
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        tmp.write_text(f"# {origin} with --set overrides, as run\n" + yaml.safe_dump(data, sort_keys=False))
    return out


def _failed_stage(run_id: str) -> str | None:
    from defsentflow.storage import Catalog

    try:
        rows = Catalog().query("SELECT stage FROM stages WHERE run_id = ? AND status = 'failed' "
                               "ORDER BY started_at DESC LIMIT 1", [run_id])
    except Exception:  # noqa: BLE001 - the error line goes out without the stage
        return None
    return rows[0]["stage"] if rows else None


def _run(args: argparse.Namespace) -> int:
    from defsentflow.storage.locks import waited_s

    started, waited = time.monotonic(), waited_s()  # the summary's time: the command's, waits for the catalog named
    cfg, config = _prepare_env(args.config, args.set)  # first: a bad config fails before torch is imported
    from defsentflow.cli import UserError
    from defsentflow.cli.compute import command_runtime, compute_for
    from defsentflow.compute import shared_paths
    from defsentflow.pipeline import log_path, new_run_id
    from defsentflow.preflight import preflight
    from defsentflow.run_log import elapsed, run_log
    from defsentflow.run_summary import summary_lines
    from defsentflow.storage import clean_stale_temporaries, data_root

    preflight(cfg, args.config)  # paths exist and are of their kind, before anything starts
    from defsentflow.storage import Catalog

    if Catalog().path.is_file():  # a writable open before Prefect starts: a shell holding it is said now
        with Catalog().connect():
            pass
    run_id = new_run_id(cfg.name)
    root = data_root()
    path = log_path(run_id)
    with run_log(path, verbose=getattr(args, "verbose", False)) as log:
        log.info(f"run {run_id}: {args.config}; full log: {path}")
        from defsentflow.flows.pipeline import pipeline

        clean_stale_temporaries(root)
        try:
            with command_runtime(compute_for(args, cfg.compute), shared_paths(cfg, root)):
                state = pipeline(str(config), only_if_changed=args.only_if_changed, run_id=run_id, return_state=True)
                if state.is_failed() or state.is_crashed():
                    log.failed_task = _failed_task(state.state_details.flow_run_id)
                result = state.result()
        except Exception as exc:  # noqa: BLE001 - one line here, the traceback is in the log (and with -v above)
            stage = _failed_stage(run_id) or log.failed_task
            cause = " ".join(str(exc).split()) or type(exc).__name__
            where = f"stage {stage}: " if stage else ""
            message = (f"run {run_id} failed after {elapsed(time.monotonic() - started)}: {where}"
                       f"{type(exc).__name__}: {cause}; full log: {path}")
            logging.getLogger("defsentflow.run").error(message, exc_info=exc, extra={"terminal": False})
            raise UserError(message) from exc
        for line in summary_lines(result, seconds=time.monotonic() - started, log_path=path, waited=waited_s() - waited):
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
    from defsentflow.config_tools import resolve_config
    from defsentflow.pipeline import selected_model_dir

    print(selected_model_dir(resolve_config(args.config), stage=args.stage))
    return 0
