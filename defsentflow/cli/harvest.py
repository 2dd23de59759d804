"""``defsentflow harvest CONFIG`` (contextual pair harvest) and the runner of ``defsentflow train surrogate CONFIG``."""

from __future__ import annotations

import argparse

from defsentflow.cli import identifier
from defsentflow.cli.compute import add_compute_flags


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("harvest", help="harvest sentence pairs labelled by contextual similarity",
                       description="Train the context scorer, choose context sets and label sentence pairs for a "
                                   "harvest config (e.g. configs/harvest-bbc.yaml). Finished batches are kept, so a "
                                   "killed harvest resumes where it stopped.")
    p.add_argument("config", help="YAML config")
    _common(p)
    add_compute_flags(p, what="batches (implies --prefect)")
    p.set_defaults(func=_harvest)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run-id", default=None, type=identifier("run id"), help="run id (default: a new one)")
    p.add_argument("--prefect", action="store_true",
                   help="run as a Prefect flow (a temporary local API unless PREFECT_API_URL is set)")


def harvest_config_arg(args: argparse.Namespace):
    from defsentflow.cli import UserError
    from defsentflow.scoring.config import load_harvest_config

    try:
        cfg = load_harvest_config(args.config)
    except (FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc)) from None
    from defsentflow.cli.compute import compute_for

    cfg = cfg.model_copy(update={"compute": compute_for(args, cfg.compute)})
    if getattr(args, "base_encoder", None):
        from defsentflow.model.lookup import find_model

        path = find_model(args.base_encoder, root=cfg.root).path
        cfg = cfg.model_copy(update={"surrogate": cfg.surrogate.model_copy(update={"base_encoder": path})})
    return cfg


def _uses_dask(cfg) -> bool:
    return cfg.compute.distributed


def _harvest(args: argparse.Namespace) -> int:
    from defsentflow.cli.compute import command_runtime
    from defsentflow.cli.stage import run_stage
    from defsentflow.compute import shared_paths
    from defsentflow.scoring.stages import run_harvest
    from defsentflow.storage import Catalog, data_root

    cfg = harvest_config_arg(args)
    result, run_id, seconds = run_stage(
        args, prefix="harvest", flow="defsentflow.flows.harvest_pairs:run_harvest_flow", payload=cfg.model_dump(mode="json"),
        local=lambda rid: run_harvest(cfg, run_id=rid), use_flow=args.prefect or _uses_dask(cfg),
        runtime=lambda: command_runtime(cfg.compute, shared_paths(cfg, data_root(cfg.root))))
    _print_harvest(Catalog(cfg.root), result, seconds, run_id)
    return 0


def _print_harvest(cat, result: dict, seconds: float, run_id: str) -> None:
    import json

    from defsentflow.cli.table import print_table

    rows = cat.query("SELECT * FROM harvest_stats WHERE artifact_key = ?", [result["key"]])
    if rows:
        r = rows[0]
        q = json.loads(r["quantiles"]) if isinstance(r["quantiles"], str) else r["quantiles"]
        print_table(["pairs", "neighbour", "random", "mean", "std", "min", "q25", "median", "q75", "max"],
                    [[r["n_pairs"], r["n_neighbour"], r["n_random"], f"{r['mean']:.4f}", f"{r['std']:.4f}",
                      f"{q['q00']:.4f}", f"{q['q25']:.4f}", f"{q['q50']:.4f}", f"{q['q75']:.4f}", f"{q['q100']:.4f}"]])
        h = json.loads(r["histogram"]) if isinstance(r["histogram"], str) else r["histogram"]
        peak = max(h["counts"]) or 1
        for lo, hi, n in zip(h["edges"], h["edges"][1:], h["counts"]):
            print(f"  [{lo:7.4f}, {hi:7.4f})  {n:7d}  {'#' * int(round(40 * n / peak))}")
    if result["scorer_metrics"]:
        print(f"context scorer held-out accuracy: {result['scorer_metrics']['heldout_accuracy']:.3f}")
    print(f"batches computed this run: {result['batches_computed']}")
    print(f"pairs: {result['path']}")
    print(f"run {run_id} done in {seconds:.1f}s")


def train_surrogate(args: argparse.Namespace) -> int:
    """``train surrogate CONFIG [--base-encoder MODEL]``."""
    from defsentflow.cli.stage import run_stage
    from defsentflow.training.surrogate import run_surrogate_config

    cfg = harvest_config_arg(args)
    result, run_id, seconds = run_stage(
        args, prefix="surrogate", flow="defsentflow.flows.train_surrogate:train_surrogate_flow",
        payload=cfg.model_dump(mode="json"), local=lambda run_id: run_surrogate_config(cfg, run_id=run_id))
    _print_surrogate(result, seconds, run_id)
    return 0


def _print_surrogate(result: dict, seconds: float, run_id: str) -> None:
    how = "cached" if result.get("cached") else f"trained in {result.get('seconds', 0):.1f}s"
    print(f"surrogate {result['model_id']} ({how}; {result.get('n_pairs')} pairs, {result.get('steps')} steps, "
          f"train loss {result.get('train_loss')})")
    print(f"model: {result['path']}  (SentenceTransformer(path) loads it)")
    sup = result.get("supervised")
    if sup:
        how = "cached" if sup.get("cached") else f"trained in {sup.get('seconds', 0):.1f}s"
        print(f"supervised {sup['model_id']} ({how}; {sup.get('n_pairs')} gold pairs, {sup.get('steps')} steps): "
              f"{sup['path']}")
    print(f"run {run_id} done in {seconds:.1f}s")
