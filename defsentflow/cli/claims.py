"""``defsentflow claims CONFIG``: measure the papers' claims on the raw control and print the table."""

from __future__ import annotations

import argparse

from defsentflow.cli.compute import add_compute_flags
from defsentflow.cli.home import use_data_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("claims", help="measure the papers' claims (arms run by the pipeline, resumable) and print the table")
    p.add_argument("config", help="claims YAML, e.g. configs/claims-raw-ci.yaml")
    p.add_argument("--only", nargs="+", metavar="CLAIM",
                   help="measure only these claims of the file (e.g. more_entries_help); the others keep their rows")
    p.add_argument("--force", action="store_true", help="rerun arms that completed already (their stages are cache hits)")
    p.add_argument("--show", action="store_true", help="print the latest table from the catalog; run nothing")
    p.add_argument("--no-run", action="store_true",
                   help="judge the claims from the arms completed so far and record them; train nothing")
    add_compute_flags(p, what="arms' PST candidates")
    p.set_defaults(func=_claims)


def _claims(args: argparse.Namespace) -> int:
    import time

    from defsentflow.claims import claim_rows, load_claims

    t0 = time.perf_counter()
    claims = load_claims(args.config)  # validated, every arm included, before anything runs
    unknown = sorted(set(args.only or ()) - set(claims.spec.claims))
    if unknown:
        raise ValueError(f"--only: {', '.join(unknown)} is not a claim of {args.config} "
                         f"(its claims: {', '.join(claims.spec.claims)})")
    use_data_root(claims.home, claims.base_path or args.config)
    from defsentflow.storage import Catalog, clean_stale_temporaries, data_root

    if args.show:
        rows = claim_rows(Catalog(), name=claims.name)
        if not rows:
            from defsentflow.cli import UserError

            raise UserError(f"no claims measured yet for {claims.name!r}; run: defsentflow claims {args.config}")
        _print(rows)
        return 0
    from defsentflow.claims import run_claims
    from defsentflow.flows.pipeline import pipeline

    clean_stale_temporaries(data_root())

    def run_point(point, config_path: str, run_id: str):
        print(f"claims {claims.name}: arm {point.label} ({point.point_id}): run {run_id}", flush=True)
        return pipeline(config_path, run_id=run_id)

    if args.no_run:
        outcome = run_claims(claims, None, only=args.only)
    else:
        from defsentflow.claims.arms import plan_arms
        from defsentflow.cli.compute import command_runtime, compute_for, shared_paths_of
        from defsentflow.config import config_from_dict
        from defsentflow.tasks.fanout import points_fan_out

        configs = [config_from_dict(p.config) for p in plan_arms(claims).points.values()]
        compute = compute_for(args, configs[0].compute if configs else None)
        with command_runtime(compute, shared_paths_of(configs)):
            outcome = run_claims(claims, run_point, only=args.only, force=args.force, fan_out=points_fan_out())
    rows = claim_rows(Catalog(), run_id=outcome.run_id)
    _print(rows)
    from defsentflow.report.run_report import build_report

    report = build_report(outcome.run_id)
    print(f"\nclaims run {outcome.run_id}: {len(rows)} claims in {time.perf_counter() - t0:.0f}s wall "
          f"({(time.perf_counter() - t0) / 60:.1f} min)")
    print(f"report:  {report.markdown_path}")
    print(f"catalog: defsentflow sql \"SELECT * FROM claims WHERE claims_run_id = '{outcome.run_id}'\"")
    for arm, why in outcome.failed.items():
        print(f"  failed arm {arm}: {why}")
    return 1 if outcome.failed else 0


def _print(rows) -> None:
    from defsentflow.cli.table import print_table
    from defsentflow.report.claims_report import claims_table, departures_line

    columns, table = claims_table(rows)
    print_table(columns, table)
    scope = departures_line(rows)
    if scope:
        print(f"\n{scope}")
