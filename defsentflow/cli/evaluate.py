"""``defsentflow eval MODEL --tasks ...`` and ``defsentflow leaderboard``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

_DEFAULT_TASKS = "sts12,sts13,sts14,sts15,sts16,stsb-dev,sickr"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="evaluate an encoder on STS tasks and the reverse dictionary; records to the catalog",
        description="Evaluate MODEL (directory, Hugging Face id, 'minilm', or a registered model id). "
                    "STS: Spearman x 100 of cosine similarity vs gold, 'all' and 'mean' settings. "
                    "Tasks: sts12..sts16, stsb-train, stsb-dev, stsb-test, sickr (SICK-R test; trial when "
                    "the test split is absent, reported as sickr-trial), sickr-trial, sickr-train, revdict, wordpred.")
    p.add_argument("model")
    p.add_argument("--tasks", default=_DEFAULT_TASKS, help=f"comma-separated (default: {_DEFAULT_TASKS})")
    p.add_argument("--pooling", default=None,
                   help="cls, mean, max, prompt or sbert_wk (default: the model's training pooling, else mean)")
    p.add_argument("--data-dir", default=None, help="folder with sts/ and sick/ (default: ../shared/data)")
    p.add_argument("--dictionary", default=None, help="dictionary dataset for revdict (name or artifact key)")
    p.add_argument("--revdict-splits", default="dev,test",
                   help="revdict/wordpred query splits, comma-separated (default: dev,test; dev is for selection)")
    p.add_argument("--revdict-protocols", default="unseen",
                   help="unseen (queries whose text the model never trained on) and/or papers (every definition "
                        "of the split), comma-separated (default: unseen)")
    p.add_argument("--revdict-candidates", choices=["all", "split"], default="all",
                   help="revdict candidates: every entry of the dictionary, or only the query split's (default: all)")
    p.add_argument("--revdict-max-queries", type=int, default=2000, help="at most this many revdict queries")
    p.add_argument("--revdict-modes", default="head,cosine",
                   help="comma-separated revdict modes: head, cosine, hybrid (default: head,cosine)")
    p.add_argument("--sick-split", choices=["auto", "test", "trial", "train"], default="auto",
                   help="file read for sickr (auto: test if present, else trial)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--max-length", type=int, default=256, help="tokens per sentence (default 256)")
    p.add_argument("--autocast", choices=["none", "bf16", "fp16"], default="none")
    p.add_argument("--device", default="auto")
    p.add_argument("--model-id", default=None, help="catalog id for the results (default: resolved from MODEL)")
    p.add_argument("--per-subset", action="store_true", help="also report each subset of a SemEval year")
    p.add_argument("--cache", action="store_true", help="use the data root's embedding cache")
    p.add_argument("--no-record", action="store_true", help="print only; write nothing to the catalog")
    p.set_defaults(func=_eval)

    p = sub.add_parser("leaderboard", help="one row per model with the scores of the tasks that were run",
                       description="One row per model (the ids of one model directory merged) and pooling, one "
                                   "column per headline score some model has (STS Spearman x 100, reverse-dictionary "
                                   "MRR, ...), best first by a run's selection figure (a dev-split score).")
    p.add_argument("--run", default=None, metavar="RUN_ID",
                   help="rank by this run's selection figure (default: the newest PST run's)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_leaderboard)


def _csv(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _eval(args: argparse.Namespace) -> int:
    import time

    from pydantic import ValidationError

    from defsentflow.cli import UserError
    from defsentflow.cli.table import print_table
    from defsentflow.config_tools import format_errors
    from defsentflow.evaluation.suite import (EvalConfig, default_data_dir, record_evaluation, resolve_model,
                                              run_evaluation)
    from defsentflow.storage import Catalog

    from defsentflow.encoders import validate_pooling

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    try:
        if args.pooling is not None:
            validate_pooling(args.pooling)
        config = EvalConfig(tasks=args.tasks, data_dir=str(data_dir), pooling=args.pooling, batch_size=args.batch_size,
                            max_length=args.max_length, autocast=args.autocast, sick_split=args.sick_split,
                            per_subset=args.per_subset, dictionary=args.dictionary, revdict_splits=_csv(args.revdict_splits),
                            revdict_protocols=_csv(args.revdict_protocols),
                            revdict_candidates=args.revdict_candidates, revdict_max_queries=args.revdict_max_queries,
                            revdict_modes=tuple(m.strip() for m in args.revdict_modes.split(",") if m.strip()),
                            device=args.device, cache=args.cache)
    except ValidationError as exc:
        raise UserError(format_errors(exc)) from None
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if any(t not in ("revdict", "wordpred") for t in config.tasks) and not data_dir.is_dir():
        raise UserError(f"data directory not found: {data_dir} (pass --data-dir)")
    cat = None if args.no_record else Catalog()
    model_id, path = resolve_model(cat, args.model) if cat else (args.model, args.model)
    model_id = args.model_id or model_id
    run_id = None
    if cat is not None:
        run_id = cat.start_run("evaluate", {"model": args.model, "model_id": model_id, **config.model_dump(mode="json")})
    t0 = time.perf_counter()
    try:
        result = run_evaluation(path, config)
    except RuntimeError as exc:
        if cat is not None:
            cat.end_run(run_id, "failed", note=str(exc))
        raise UserError(str(exc)) from None
    except BaseException as exc:
        if cat is not None:
            cat.end_run(run_id, "failed", note=f"{type(exc).__name__}: {exc}")
        raise
    seconds = time.perf_counter() - t0
    print_table(["task", "setting", "metric", "value", "n", "pooling", "source"],
                [(r["task"], r["setting"], r["metric"], r["value"], r.get("n"), r.get("pooling"),
                  os.path.basename(str(r.get("source") or "")) if "," not in str(r.get("source") or "") else "")
                 for r in result.rows])
    avg = result.average
    if avg is not None:
        print(f"\n{avg['label']}: {avg['value']:.2f}")
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in result.seconds.items())
    print(f"model {model_id} ({result.pooling} pooling): {seconds:.1f}s in all ({timing})")
    if cat is not None:
        n = record_evaluation(cat, model_id, result, run_id=run_id)
        cat.record_stage(run_id, "evaluate", "completed", seconds=seconds, note=f"{n} metric rows for {model_id}")
        cat.end_run(run_id, "completed")
        print(f"recorded {n} metric rows for {model_id} (run {run_id})")
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    import json

    from defsentflow.cli.table import print_table
    from defsentflow.report.leaderboard import load_leaderboard
    from defsentflow.storage import Catalog

    cat = Catalog(reader=True)  # read-only: never creates the catalog or changes its schema
    if not cat.path.is_file():
        print(f"no evaluation results yet (no catalog at {cat.path}): run `defsentflow eval MODEL --tasks ...`")
        return 0
    board = load_leaderboard(cat, run_id=args.run)
    if args.json:
        print(json.dumps(board.to_dict(), indent=2, default=str))
        return 0
    if not board.rows:
        print("no evaluation results yet: run `defsentflow eval MODEL --tasks ...`")
        return 0
    print_table(*board.table())
    print(f"\n{board.sort_note}. STS: Spearman x 100 ('all' setting); *_mrr: reverse-dictionary MRR in [0, 1].")
    return 0
