"""``defsentflow report RUN_ID [--out DIR]``: the run report as Markdown and HTML with PNG figures."""

from __future__ import annotations

import argparse

from defsentflow.cli import identifier


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write report.md and report.html for a run",
                       description="Write <data root>/reports/RUN_ID/report.md and report.html (config, lineage, "
                                   "scores beside the baselines, PST progress with entry-space plots, harvested "
                                   "label histograms). Images are PNGs in img/, linked by relative paths.")
    p.add_argument("run_id", type=identifier("run id"))
    p.add_argument("--out", default=None, help="output folder (default: <data root>/reports/RUN_ID)")
    p.add_argument("--no-analyse", action="store_true",
                   help="do not compute missing entry-space statistics of PST steps")
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.report import build_report
    from defsentflow.storage import Catalog

    # With --out elsewhere, a reader: a read-only data root works, nothing is registered.
    cat = Catalog(reader=args.out is not None)
    if not cat.query("SELECT 1 FROM runs WHERE run_id = ?", [args.run_id]):
        recent = [r["run_id"] for r in cat.query("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 5")]
        raise UserError(f"no run {args.run_id!r} in {cat.path}" + (f"; recent runs: {', '.join(recent)}" if recent else ""))
    report = build_report(args.run_id, out_dir=args.out, catalog=cat, analyse_missing=not args.no_analyse)
    print(f"wrote {report.markdown_path}")
    print(f"wrote {report.html_path} ({len(report.images)} images)")
    return 0
