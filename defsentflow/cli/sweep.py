"""``defsentflow sweep run|show|table SWEEP.yaml``: expand a sweep into pipeline runs, run them, tabulate."""

from __future__ import annotations

import argparse
from pathlib import Path

from defsentflow.cli.compute import add_compute_flags
from defsentflow.cli.home import use_data_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a sweep: a base pipeline config and lists of values, one pipeline run per point")
    ss = p.add_subparsers(dest="sweep_command", required=True, metavar="SUBCOMMAND")
    r = ss.add_parser("run", help="run every point not yet completed (resumable), then write the table")
    r.add_argument("sweep", help="sweep YAML, e.g. configs/sweeps/minilm-wordnet.yaml")
    r.add_argument("--only", nargs="+", metavar="POINT", help="run only these points (id, name or position)")
    r.add_argument("--force", action="store_true", help="rerun completed points too (their stages are cache hits)")
    r.add_argument("--fail-fast", action="store_true", help="stop at the first failed point")
    add_compute_flags(r, what="points' PST candidates")
    r.set_defaults(func=_run)
    s = ss.add_parser("show", help="validate the sweep and list its points with their status")
    s.add_argument("sweep")
    s.set_defaults(func=_show)
    t = ss.add_parser("table", help="print the results table and write it as Markdown and PNG")
    t.add_argument("sweep", help="sweep YAML or a sweep name in the catalog")
    t.set_defaults(func=_table)
    for q in (r, s, t):
        q.add_argument("--max-points", type=int, default=None, metavar="N",
                       help="refuse a sweep of more than N points, counted before expanding (default 10000)")


def _load(path: str, max_points: int | None = None):
    from defsentflow.cli import UserError
    from defsentflow.sweep import MAX_SWEEP_POINTS, load_sweep

    if max_points is not None and max_points < 1:
        raise UserError(f"--max-points must be >= 1, got {max_points}")
    sweep = load_sweep(path, max_points=max_points or MAX_SWEEP_POINTS)
    use_data_root(sweep.home, sweep.base_path or path)
    return sweep


def _run(args: argparse.Namespace) -> int:
    sweep = _load(args.sweep, args.max_points)
    from defsentflow.config import config_from_dict
    from defsentflow.preflight import preflight

    for point in sweep.points:  # every point's paths, before the first point runs
        preflight(config_from_dict(point.config), f"{args.sweep}: point {point.point_id}")
    from defsentflow.flows.sweep import sweep_flow
    from defsentflow.storage import clean_stale_temporaries, data_root

    clean_stale_temporaries(data_root())
    print(f"sweep {sweep.name}: {len(sweep.points)} points")
    from defsentflow.cli.compute import command_runtime, compute_for, shared_paths_of

    configs = [config_from_dict(point.config) for point in sweep.points]
    with command_runtime(compute_for(args, configs[0].compute), shared_paths_of(configs)):
        result = sweep_flow(sweep.path, only=args.only, force=args.force, fail_fast=args.fail_fast,
                            **({"max_points": args.max_points} if args.max_points else {}))
    _print_table(sweep.name)
    print(f"\nran {len(result['ran'])}, already done {len(result['skipped'])}, failed {len(result['failed'])} "
          f"in {result['seconds']:.0f}s")
    for pid, why in result["failed"].items():
        print(f"  failed {pid}: {why}")
    print(f"table: {result['report']['markdown_path']}")
    return 1 if result["failed"] else 0


def _show(args: argparse.Namespace) -> int:
    from defsentflow.cli.table import print_table
    from defsentflow.storage import data_root

    sweep = _load(args.sweep, args.max_points)
    rows = {}
    if (data_root() / "catalog.duckdb").is_file():
        from defsentflow.sweep import point_rows

        rows = point_rows(sweep.name)
    print(f"sweep {sweep.name}: {len(sweep.points)} points; base {sweep.base_path or '(inline)'}")
    print_table(["#", "point", "values", "status", "run"],
                [(p.position, p.point_id, p.label, rows.get(p.point_id, {}).get("status", "not run"),
                  rows.get(p.point_id, {}).get("run_id")) for p in sweep.points])
    return 0


def _print_table(name: str) -> None:
    from defsentflow.cli.table import print_table
    from defsentflow.report.sweep_report import sweep_table

    table = sweep_table(name)
    print_table(table.columns, table.rows)


def _table(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.report.sweep_report import write_sweep_report

    name = _load(args.sweep, args.max_points).name if Path(args.sweep).suffix in (".yaml", ".yml") else args.sweep
    try:
        _print_table(name)
    except KeyError as exc:
        raise UserError(str(exc.args[0])) from None
    out = write_sweep_report(name)
    print(f"\nmarkdown: {out.markdown_path}")
    if out.chart_path:
        print(f"chart:    {out.chart_path}")
    return 0
