"""``defsentflow train pst|defsent|surrogate CONFIG``: training runs from a YAML config."""

from __future__ import annotations

import argparse

from defsentflow.cli import identifier


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train encoders: pst, defsent, surrogate")
    tsub = p.add_subparsers(dest="train_command", required=True, metavar="KIND")

    q = tsub.add_parser("pst", help="Progressive Separate Training (DefSent+) from the config's 'pst:' section",
                        description="Run PST: step 0 scores the untrained encoder; each later step rebuilds the "
                                    "entry matrix with the previous step's best encoder and trains fresh copies "
                                    "of the original weights. Cached: an unchanged re-run recomputes nothing.")
    _common(q)
    q.set_defaults(func=_pst)

    q = tsub.add_parser("defsent", help="one DefSent / DefSent+ run from the config's 'defsent:' section")
    _common(q)
    q.set_defaults(func=_defsent)

    q = tsub.add_parser("surrogate", help="train the surrogate encoder on a config's harvested pairs",
                        description="Harvest (cached stages are skipped), then train a Siamese encoder whose cosine "
                                    "regresses the pair labels; registered in the catalog's models table.")
    _common(q)
    q.add_argument("--base-encoder", metavar="MODEL",
                   help="start from this encoder instead of the config's surrogate.base_encoder: a directory or a "
                        "catalog model id (e.g. the raw encoder id `defsentflow pretrain CONFIG` prints)")
    q.set_defaults(func=_surrogate)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML config")
    p.add_argument("--run-id", default=None, type=identifier("run id"), help="run id (default: a new one)")
    p.add_argument("--prefect", action="store_true",
                   help="run as a Prefect flow (a temporary local API unless PREFECT_API_URL is set)")


def _load(path: str, key: str):
    from defsentflow.cli import UserError
    from defsentflow.config import load_section

    try:
        return load_section(path, key)  # type: ignore[arg-type]
    except (FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc)) from None


def _check_dictionary(name: str) -> None:
    """Fail early, with the command that fixes it, when the dictionary dataset is not ingested."""
    from defsentflow.cli import UserError
    from defsentflow.dictionary import resolve_dictionary

    try:
        resolve_dictionary(name)
    except KeyError as exc:
        hint = ""
        if name == "sample":
            hint = (" (ingest the embedded sample: defsentflow ingest dictionary --source jsonl "
                    "defsentflow/sample/dictionary/oewn-sample.jsonl --name sample)")
        raise UserError(f"{str(exc).strip(chr(34) + chr(39))}{hint}") from None


def _print_step(step) -> None:
    from defsentflow.cli.table import print_table

    how = "cached" if step.cached else f"{step.seconds:.1f}s"
    print(f"step {step.step} ({how}):")
    print_table(["candidate", "model_id", step.best.metric or "score", "best"],
                [(c.label, c.model_id, c.score, "*" if c is step.best or c == step.best else "")
                 for c in step.candidates])
    print()


def _pst(args: argparse.Namespace) -> int:
    from defsentflow.cli.stage import run_stage
    from defsentflow.training.pst import run_pst

    section = _load(args.config, "pst")
    _check_dictionary(section.dictionary)
    result, run_id, seconds = run_stage(
        args, prefix="pst", flow="defsentflow.flows.pst:pst_flow", payload=section.model_dump(mode="json"),
        local=lambda run_id: run_pst(section, run_id=run_id, on_step=_print_step))
    if args.prefect:
        for step in result.steps:
            _print_step(step)
    if result.selection.note:
        print(f"note: {result.selection.note}")
    print(f"{result.stop_note}")
    print(f"winner: {result.reason}")
    print(f"model: {result.model_id} -> {result.model_dir}")
    print(f"run {run_id} done in {seconds:.1f}s (record: {result.record_path})")
    return 0


def _defsent(args: argparse.Namespace) -> int:
    from defsentflow.cli.stage import run_stage
    from defsentflow.training.pst import run_defsent

    section = _load(args.config, "defsent")
    _check_dictionary(section.dictionary)
    result, run_id, seconds = run_stage(
        args, prefix=section.method.replace("_", "-"), flow="defsentflow.flows.train_defsent:train_defsent_flow",
        payload=section.model_dump(mode="json"), local=lambda run_id: run_defsent(section, run_id=run_id))
    print(f"{result.method}: {result.n_definitions} training definitions -> {result.model_id} ({result.model_dir})")
    print(f"run {run_id} done in {seconds:.1f}s")
    return 0


def _surrogate(args: argparse.Namespace) -> int:
    from defsentflow.cli.harvest import train_surrogate

    return train_surrogate(args)
