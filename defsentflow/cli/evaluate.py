"""``defsentflow eval MODEL --tasks ...`` and ``defsentflow leaderboard``."""

from __future__ import annotations

import argparse
import os
import uuid
from pathlib import Path

from defsentflow.eval_tasks import CANONICAL, DEFAULT_TASKS, EVAL_TASKS, PROTOCOLS, TIE_RULES

_DEFAULT_TASKS = ",".join(DEFAULT_TASKS)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="evaluate an encoder on STS tasks and the reverse dictionary; records to the catalog",
        description="Evaluate MODEL (directory, Hugging Face id, 'minilm', or a registered model id). "
                    "STS: Spearman x 100 of cosine similarity vs gold, 'all' and 'mean' settings. "
                    f"Tasks: {', '.join(EVAL_TASKS)} (sickr: SICK-R test; trial when the test split is absent, "
                    "reported as sickr-trial).")
    p.add_argument("model")
    p.add_argument("--tasks", default=_DEFAULT_TASKS, help=f"comma-separated (default: {_DEFAULT_TASKS})")
    p.add_argument("--pooling", default=None,
                   help="cls, mean, max, prompt, sbert_wk or sbert_wk_mean (default: the model's training pooling, else mean)")
    p.add_argument("--data-dir", default=None, help="folder with sts/ and sick/ (default: ../shared/data)")
    p.add_argument("--dictionary", default=None, help="dictionary dataset for revdict (name or artifact key)")
    p.add_argument("--revdict-splits", default="dev,test",
                   help="revdict/wordpred query splits, comma-separated (default: dev,test; dev is for selection)")
    p.add_argument("--revdict-protocols", default="unseen",
                   help="revdict/wordpred query protocols, comma-separated (default: unseen): "
                        + "; ".join(f"{p.name}: {p.description}" for p in PROTOCOLS.values())
                        + " (all-definitions: wordpred only)")
    p.add_argument("--revdict-candidates", choices=["all", "split"], default=CANONICAL.candidates,
                   help="revdict candidates: every entry of the dictionary, or only the query split's (default: all)")
    p.add_argument("--revdict-max-queries", type=int, default=CANONICAL.max_queries,
                   help=f"the unseen protocol's sample size (default {CANONICAL.max_queries})")
    p.add_argument("--ties", choices=TIE_RULES, default=CANONICAL.ties,
                   help="revdict/wordpred: the rank of a gold entry tied with others (default: pessimistic, after "
                        "them; a figure with another rule is named apart)")
    p.add_argument("--revdict-modes", default="head,cosine",
                   help="comma-separated revdict modes: head, cosine, hybrid (default: head,cosine)")
    p.add_argument("--sick-split", choices=["auto", "test", "trial", "train"], default="auto",
                   help="file read for sickr (auto: test if present, else trial)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--max-length", type=int, default=CANONICAL.max_length,
                   help=f"tokens per text, every task (default {CANONICAL.max_length})")
    p.add_argument("--autocast", choices=["none", "bf16", "fp16"], default="none")
    p.add_argument("--device", default="auto")
    p.add_argument("--model-id", default=None, help="catalog id for the results (default: resolved from MODEL)")
    p.add_argument("--per-subset", action="store_true", help="also report each subset of a SemEval year")
    p.add_argument("--pearson", action="store_true", help="STS: also report Pearson x 100 (SBERT-WK's Table III)")
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
    p.add_argument("--wide", action="store_true",
                   help="every figure, by its full name, and every model's other ids (default: the headline "
                        "figures in 120 columns)")
    p.set_defaults(func=_leaderboard)


def _section(args: argparse.Namespace):
    """The ``EvaluateSection`` from every flag named after one of its fields (comma lists split)."""
    from defsentflow.evaluation.suite import EvaluateSection

    data = {}
    for name in EvaluateSection.model_fields:
        value = getattr(args, name, None)
        if isinstance(value, str) and name != "tasks" and "tuple" in str(EvaluateSection.model_fields[name].annotation):
            value = tuple(v.strip() for v in value.split(",") if v.strip())
        if value is not None:
            data[name] = value
    return EvaluateSection.model_validate(data)


def _eval(args: argparse.Namespace) -> int:
    import time

    from pydantic import ValidationError

    from defsentflow.cli import UserError
    from defsentflow.cli.table import print_table
    from defsentflow.config_tools import format_errors
    from defsentflow.evaluation.kinds import kind_of
    from defsentflow.evaluation.stage import run_evaluate

    try:
        section = _section(args)
    except ValidationError as exc:
        raise UserError(format_errors(exc)) from None
    data_dir = Path(section.resolved_data_dir())
    if any(kind_of(t).reads_data_dir for t in section.tasks) and not data_dir.is_dir():  # STS, transfer
        raise UserError(f"data directory not found: {data_dir} (pass --data-dir)")
    from defsentflow.model.lookup import find_model

    find_model(section.model)  # an unknown name: one line, before any run is recorded
    run_id = None if args.no_record else f"eval-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    try:
        result = run_evaluate(section, run_id=run_id)
    except RuntimeError as exc:
        raise UserError(str(exc)) from None
    seconds = time.perf_counter() - t0
    print_table(["task", "setting", "metric", "value", "n", "pooling", "source"],
                [(r["task"], r["setting"], r["metric"], r["value"], r.get("n"), r.get("pooling"),
                  os.path.basename(str(r.get("source") or "")) if "," not in str(r.get("source") or "") else "")
                 for r in result["rows"]])
    avg = result["average"]
    if avg is not None:
        print(f"\n{avg['label']}: {avg['value']:.2f}")
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in result["seconds"].items())
    print(f"model {result['model_id']} ({result['pooling']} pooling): {seconds:.1f}s in all ({timing})")
    if result.get("cached"):
        print("reused the stored figures (same model content, task settings, pooling, inputs and code version: "
              "an earlier eval, a pipeline run or PST's selection computed them)")
    if run_id is not None:
        print(f"recorded {result['recorded']} metric rows for {result['model_id']} (run {run_id})")
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    import json
    import textwrap

    from defsentflow.cli import UserError
    from defsentflow.cli.board import WIDTH, board_lines
    from defsentflow.report.leaderboard import load_leaderboard
    from defsentflow.storage import Catalog

    cat = Catalog(reader=True)  # read-only: never creates the catalog or changes its schema
    if not cat.path.is_file():  # as every reading command: one line, exit 2 (docs/security.md)
        raise UserError(f"no catalog at {cat.path}: no evaluation results yet (run `defsentflow eval MODEL --tasks ...`)")
    board = load_leaderboard(cat, run_id=args.run)
    if args.json:
        print(json.dumps(board.to_dict(), indent=2, default=str))
        return 0
    if not board.rows:
        print(f"no model to rank: {board.sort_note}" if board.gone else
              "no evaluation results yet: run `defsentflow eval MODEL --tasks ...`")
        return 0
    print("\n".join(board_lines(board, wide=args.wide)))
    note = f"{board.sort_note}. STS: Spearman x 100 ('all' setting); mrr: reverse-dictionary MRR in [0, 1]."
    print("\n" + textwrap.fill(note, WIDTH, break_on_hyphens=False, break_long_words=False))  # ids stay whole
    return 0
