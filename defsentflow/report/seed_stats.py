"""Table 2's statistic: the chosen PST combination's figures as mean ± sd over its seeds.

DefSent+ (Liu 2024, Table 2) reports each setting as the mean ± sd over its ten runs. With
``eval.seed_stats: true`` the pipeline (:func:`defsentflow.pipeline.chosen_combination_seeds`) evaluates every seed's model of the chosen combination
(the winner's step, pooling, entry encoding and ICA choice) on every evaluation task, with the
pooling the winner is evaluated with; this section of the run report gives, per task, that mean ±
sd beside the selected (best) seed's figure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["seed_stats_rows", "seed_stats_section"]


def _headline(r: dict[str, Any]) -> bool:
    if "/" in r["task"]:
        return False  # per-subset rows
    if r["metric"] == "spearman":
        return r["setting"] == "all"
    return r["metric"] in ("mrr", "mrr@10", "top1", "top10")


def seed_stats_rows(rows: Callable[..., list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per (task, setting, metric): mean, sd (sample), n over the chosen combination's seeds, and the
    selected seed's figure; [] when fewer than two seeds were evaluated."""
    win = rows("SELECT s.step, s.seed, s.model_id, s.pooling, s.entry_encoding, coalesce(s.ica, false) AS ica "
               "FROM pst_runs AS r JOIN pst_steps AS s ON s.run_id = r.run_id AND s.model_id = r.winner_model_id "
               "AND s.step = r.winner_step WHERE r.run_id = $run_id AND r.winner_step >= 1 LIMIT 1")
    if not win:
        return []
    w = win[0]
    seeds = rows("SELECT seed, model_id FROM pst_steps WHERE run_id = $run_id AND step = $step AND pooling = $pooling "
                 "AND entry_encoding IS NOT DISTINCT FROM $enc AND coalesce(ica, false) = $ica",
                 step=w["step"], pooling=w["pooling"], enc=w["entry_encoding"], ica=w["ica"])
    ids = {r["model_id"]: r["seed"] for r in seeds}
    figures = [r for r in rows("SELECT model_id, task, setting, metric, arg_max(value, created_at) AS value "
                               "FROM metrics WHERE run_id = $run_id AND list_contains($ids, model_id) GROUP BY ALL",
                               ids=list(ids)) if _headline(r)]
    groups: dict[tuple[str, str, str], dict[str, float]] = {}
    for r in figures:
        groups.setdefault((r["task"], r["setting"], r["metric"]), {})[r["model_id"]] = float(r["value"])
    out = []
    for (task, setting, metric), by_model in sorted(groups.items()):
        values = list(by_model.values())
        if len(values) < 2:
            continue
        out.append({"task": task, "setting": setting, "metric": metric, "mean": float(np.mean(values)),
                    "sd": float(np.std(values, ddof=1)), "n": len(values), "best_seed": w["seed"],
                    "best": by_model.get(w["model_id"])})
    return out


def seed_stats_section(rows: Callable[..., list[dict[str, Any]]], markdown_table: Callable[..., str]) -> list[str]:
    """The run report's "Mean over seeds" section (empty unless ``eval.seed_stats`` evaluated the seeds)."""
    found = seed_stats_rows(rows)
    if not found:
        return []

    def fmt(v: float | None, metric: str) -> str:
        return "" if v is None else f"{v:.2f}" if metric == "spearman" else f"{v:.4f}"

    table = [[r["task"], r["setting"], r["metric"], f"{fmt(r['mean'], r['metric'])} ± {fmt(r['sd'], r['metric'])}",
              r["n"], fmt(r["best"], r["metric"])] for r in found]
    return ["## Mean over seeds (the chosen combination)", "",
            "Every seed of the combination PST chose (its step, pooling, entry encoding and ICA choice), evaluated "
            "with the selected model's pooling: mean ± sd (sample) over the seeds, DefSent+ Table 2's statistic, "
            f"beside the selected seed (seed {found[0]['best_seed']}). STS: Spearman x 100.", "",
            markdown_table(["task", "setting", "metric", "mean ± sd", "seeds", "selected seed"], table), ""]
