"""``defsentflow origin CONFIG``: the harvest labeller's quality on STS ("Origin"), with baselines."""

from __future__ import annotations

import argparse
import uuid

DEFAULT_TASKS = "stsb-dev,sts12,sts13,sts14,sts15,sts16"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("origin", help="measure a harvest config's pair labels against STS gold scores",
                       description="Apply the config's labeller (retrieval, context scorer, context sets, Eq. 4) to "
                                   "STS sentence pairs and report Spearman x100 beside TF-IDF cosine, averaged word "
                                   "vectors and the scorer's encoder; recorded in the catalog (method 'origin').")
    p.add_argument("config", help="harvest YAML config (e.g. configs/harvest-bbc.yaml)")
    p.add_argument("--tasks", default=DEFAULT_TASKS, help=f"comma list of STS tasks (default {DEFAULT_TASKS})")
    p.add_argument("--data-dir", default=None, help="directory holding sts/ (default ../shared/data)")
    p.add_argument("--set-sizes", default=None, metavar="N,N", help="|C_s| values to sweep (default: the config's)")
    p.add_argument("--selections", default=None, metavar="S,S",
                   help="selection strategies to sweep: diverse, top, random (default: the config's)")
    p.add_argument("--similarities", default=None, metavar="S,S",
                   help="pair similarities to sweep: cosine (Eq. 4), centered_cosine (default: the config's)")
    p.add_argument("--top-n", type=int, default=None,
                   help="chunks retrieved per sentence (default: the config's, raised to |C_s| where smaller)")
    p.add_argument("--no-baselines", action="store_true", help="only the labeller rows")
    p.add_argument("--run-id", default=None, help="run id (default: a new one)")
    p.set_defaults(func=_origin)


def _ints(text: str, what: str) -> list[int]:
    from defsentflow.cli import UserError

    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{what}: expected a comma list of integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise UserError(f"{what}: expected positive integers, got {text!r}")
    return values


def points_from_args(cfg, set_sizes: str | None, selections: str | None, top_n: int | None,
                     similarities: str | None = None) -> list:
    """The sweep's labeller settings: every (|C_s|, selection, similarity), ``top_n >= |C_s|``."""
    from defsentflow.cli import UserError
    from defsentflow.scoring.context_sets import SELECTIONS
    from defsentflow.scoring.origin import OriginPoint

    sizes = _ints(set_sizes, "--set-sizes") if set_sizes else [cfg.contexts.set_size]
    sels = [s.strip() for s in selections.split(",") if s.strip()] if selections else [cfg.contexts.selection]
    bad = [s for s in sels if s not in SELECTIONS]
    if bad or not sels:
        raise UserError(f"--selections: unknown {bad}; valid: {', '.join(SELECTIONS)}")
    sims = [s.strip() for s in similarities.split(",") if s.strip()] if similarities else [cfg.pairs.similarity]
    bad = [s for s in sims if s not in ("cosine", "centered_cosine")]
    if bad or not sims:
        raise UserError(f"--similarities: unknown {bad}; valid: cosine, centered_cosine")
    base = top_n or cfg.retrieval.top_n
    return [OriginPoint(n, s, max(base, n), sim) for sim in sims for s in sels for n in sizes]


def _origin(args: argparse.Namespace) -> int:
    from defsentflow.cli import check_count
    from defsentflow.config_tools import LIMITS

    check_count(args.top_n, "--top-n", LIMITS["count"])
    from defsentflow.cli.harvest import harvest_config_arg
    from defsentflow.cli.table import print_table
    from defsentflow.evaluation.label_quality import record_label_quality, run_label_quality
    from defsentflow.evaluation.sts_data import validate_tasks
    from defsentflow.evaluation.suite import default_data_dir
    from defsentflow.storage import Catalog

    cfg = harvest_config_arg(args)
    points = points_from_args(cfg, args.set_sizes, args.selections, args.top_n, args.similarities)
    validate_tasks(args.tasks)  # before the run is recorded: a typo is not a failed run
    run_id = args.run_id or f"origin-{uuid.uuid4().hex[:8]}"
    cat = Catalog(cfg.root)
    with cat.recorded_run("label-quality", run_id, config={"harvest": cfg.model_dump(mode="json"), "tasks": args.tasks,
                                                         "points": [p.name for p in points]}):
        result = run_label_quality(cfg, tasks=args.tasks, data_dir=args.data_dir or default_data_dir(),
                                   points=points, baselines=not args.no_baselines, run_id=run_id)
        record_label_quality(cat, result, run_id=run_id)
    tasks = list(dict.fromkeys(r["task"] for r in result.rows))
    labels = {m["model_id"]: m["meta"]["label"] for m in result.models}
    table = []
    for m in result.models:
        vals = {r["task"]: r["value"] for r in result.rows if r["model_id"] == m["model_id"] and r["setting"] == "all"}
        secs = m["meta"].get("seconds")
        table.append([labels[m["model_id"]], *(f"{vals[t]:.2f}" if t in vals else "-" for t in tasks),
                      f"{secs:.0f}" if secs is not None else ""])
    print_table(["labels", *tasks, "seconds"], table)
    print(f"Spearman x100 ('all' setting); prepare {result.seconds.get('prepare', 0):.0f}s; run {run_id}")
    return 0
