"""``defsentflow pretrain CONFIG``: masked-LM pretraining of a raw encoder from the config's ``pretrain:`` section."""

from __future__ import annotations

import argparse
import time
import uuid

from defsentflow.cli import identifier


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pretrain", help="pretrain a raw BERT encoder by masked-LM (the 'pretrain:' section)",
                       description="Ingest the section's corpora (a cache hit when unchanged), add the dictionary's "
                                   "usage examples (never its definitions), pretrain a fresh BERT by masked-LM and "
                                   "register it (method 'pretrain'). A killed run resumes from its checkpoint; an "
                                   "unchanged re-run is skipped.")
    p.add_argument("config", help="YAML config with a 'pretrain:' section")
    p.add_argument("--run-id", default=None, type=identifier("run id"), help="run id (default: a new one)")
    p.add_argument("--stop-after-steps", type=int, default=None, metavar="N",
                   help="stop after N optimizer steps, leaving a checkpoint (run again to finish)")
    p.add_argument("--prefect", action="store_true",
                   help="run as the 'pretrain' Prefect flow (a temporary local API unless PREFECT_API_URL is set)")
    p.set_defaults(func=_pretrain)


def _pretrain(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.config import load_pretrain_section

    try:
        section = load_pretrain_section(args.config)
    except (FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if args.stop_after_steps is not None and args.stop_after_steps < 1:
        raise UserError("--stop-after-steps must be >= 1")
    run_id = args.run_id or f"pretrain-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    try:
        if args.prefect:
            from defsentflow.flows.pretrain import pretrain_flow
            from defsentflow.tasks.server import local_api

            with local_api():
                out = pretrain_flow(section.model_dump(mode="json"), run_id=run_id, stop_after_steps=args.stop_after_steps)
        else:
            from defsentflow.training.pretrain import run_pretrain

            out = run_pretrain(section, run_id=run_id, stop_after_steps=args.stop_after_steps)
    except KeyError as exc:  # the dictionary is not ingested
        raise UserError(f"{str(exc).strip(chr(34) + chr(39))} (ingest it first: defsentflow ingest dictionary "
                        f"--source KIND PATH --name {section.dictionary}, or set pretrain.dictionary: null)") from None
    except LookupError as exc:  # a corpus without paths that is not ingested
        raise UserError(str(exc)) from None
    from defsentflow.cli.table import print_table

    if out.counts:
        print_table(["source", "texts"], sorted(out.counts.items()))
    if not out.completed:
        print(f"stopped at step {out.steps}/{out.total_steps} (loss {out.final_loss:.3f}); run again to resume")
    else:
        how = "cached" if out.cached else f"{out.steps} steps, loss {out.first_loss:.3f} -> {out.final_loss:.3f}"
        print(f"{out.model_id} ({how}) -> {out.model_dir}")
    print(f"run {run_id} done in {time.perf_counter() - t0:.1f}s")
    return 0
