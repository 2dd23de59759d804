"""The sweep table: one row per point of a sweep, beside the untrained baseline, as Markdown and a PNG.

Read from the catalog's ``sweep_results`` view (``sql/060_sweeps.sql``) and the ``leaderboard``;
written to ``<data root>/reports/sweeps/<sweep>/sweep.md`` and ``sweep.png`` (a scatter of each
point's STS-B dev Spearman against its reverse-dictionary MRR, with the untrained encoder's values
as reference lines). Files are written under temporary names and renamed into place.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from defsentflow.entryspace.figures import new_figure, save_figure
from defsentflow.model.ids import base_model_id
from defsentflow.storage import Catalog, check_identifier, data_root, root_place
from defsentflow.storage.atomic import atomic_path
from defsentflow.sweep_seeds import catalog_figure, seed_rows

__all__ = ["SweepReport", "SweepTable", "sweep_table", "write_sweep_report", "plot_sweep"]

# Ranked by "dev selection" (the dev figure PST chose with: STS-B dev or reverse-dictionary dev MRR);
# test-split columns are reported beside it and never ranked on.
COLUMNS = ("#", "point", "values", "status", "winner step", "trained step", "dev selection", "STS-B dev",
           "Δ STS-B dev", "revdict dev MRR cosine", "revdict test MRR head", "revdict test MRR cosine",
           "revdict test MRR hybrid", "minutes")


@dataclass(frozen=True)
class SweepTable:
    sweep: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    results: list[dict[str, Any]]          # the sweep_results rows
    baseline: dict[str, Any] | None        # the untrained encoder's leaderboard row


@dataclass(frozen=True)
class SweepReport:
    sweep: str
    markdown_path: Path
    chart_path: Path | None
    markdown: str


def _baseline(cat: Any, results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The untrained base encoder's leaderboard row (the pipeline's ``untrained`` baseline)."""
    run_ids = [r["run_id"] for r in results if r["run_id"]]
    if not run_ids:
        return None
    runs = cat.query("SELECT json_extract_string(config, '$.pst.base_model') AS base, "
                     "json_extract_string(config, '$.eval.pooling') AS pooling FROM runs "
                     "WHERE list_contains(?, run_id) AND config IS NOT NULL LIMIT 1", [run_ids])
    if not runs or not runs[0]["base"]:
        return None
    key = [base_model_id(runs[0]["base"]), runs[0]["pooling"] or "mean"]
    rows = cat.query("SELECT * FROM model_headline WHERE model_id = ? AND coalesce(pooling, '') = ?", key)
    if not rows:
        return None
    def mrr(task: str, mode: str) -> float | None:
        got = cat.query("SELECT arg_max(value, created_at) AS mrr FROM metrics WHERE model_id = ? "
                        "AND coalesce(pooling, '') = ? AND task_base(task) = ? AND setting = ? AND metric = 'mrr'", [*key, task, mode])
        return got[0]["mrr"] if got else None

    return {**rows[0], "revdict_mrr_hybrid": mrr("revdict", "hybrid"), "revdict_dev_mrr_cosine": mrr("revdict-dev", "cosine"),
            "selection": results[0].get("untrained_selection")}


def _spec(cat: Any, sweep: str) -> dict[str, Any] | None:
    got = cat.query("SELECT spec FROM sweeps WHERE sweep = ?", [sweep])
    if not got or not got[0]["spec"]:
        return None
    return json.loads(got[0]["spec"]) if isinstance(got[0]["spec"], str) else got[0]["spec"]


def _with_select_on(cat: Any, sweep: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A sweep naming its dev figure (``select_on``, :mod:`defsentflow.sweep_seeds`) ranks its points by
    that figure (e.g. DefSent's every-definition word prediction MRR@10), not the view's default."""
    spec = _spec(cat, sweep)
    figure = (spec or {}).get("select_on")
    if not figure:
        return results
    return [{**r, "trained_selection": catalog_figure(cat, r["trained_model_id"], figure), "selection_metric": figure}
            for r in results]


def sweep_table(sweep: str, root: str | os.PathLike | None = None) -> SweepTable:
    """The sweep's rows ranked by their dev selection figure (best first), the untrained baseline first.

    Test-split columns are shown beside the dev figure; no ranking reads them.

    Raises:
        KeyError: no sweep of that name in the catalog.
    """
    cat = Catalog(root)
    with cat.connect():  # a writable open applies the DDL: an older catalog gains the view
        pass
    results = cat.query("SELECT * FROM sweep_results WHERE sweep = ? ORDER BY position", [sweep])
    if not results:
        known = [r["sweep"] for r in cat.query("SELECT DISTINCT sweep FROM sweep_points ORDER BY 1")]
        raise KeyError(f"no sweep {sweep!r} in the catalog (known: {', '.join(known) or 'none'})")
    results = _with_select_on(cat, sweep, results)
    base = _baseline(cat, results)
    base_stsb = base["stsb_dev"] if base else None
    rows: list[tuple[Any, ...]] = []
    if base:
        rows.append(("", "untrained", base["model_id"], "", 0, "", base["selection"], base["stsb_dev"], None,
                     base["revdict_dev_mrr_cosine"], base["revdict_mrr"], base["revdict_mrr_cosine"],
                     base.get("revdict_mrr_hybrid"), None))
    ranked = sorted(results, key=lambda r: (r["trained_selection"] is None, -(r["trained_selection"] or 0.0),
                                            r["position"]))
    for r in ranked:
        delta = r["stsb_dev"] - base_stsb if r["stsb_dev"] is not None and base_stsb is not None else None
        rows.append((r["position"], r["point_id"], r["label"], r["status"], r["winner_step"], r["trained_step"],
                     r["trained_selection"], r["stsb_dev"], delta, r["revdict_dev_cosine_mrr"], r["revdict_head_mrr"],
                     r["revdict_cosine_mrr"], r["revdict_hybrid_mrr"],
                     None if r["seconds"] is None else r["seconds"] / 60))
    return SweepTable(sweep=sweep, columns=COLUMNS, rows=rows, results=results, baseline=base)


def _md_cell(v: Any, column: str) -> str:
    if v is None or v == "":
        return ""
    if isinstance(v, float):
        if column.startswith("revdict") or (column == "dev selection" and abs(v) <= 1):
            return f"{v:.3f}"
        if column.startswith("Δ"):
            return f"{v:+.2f}"
        return f"{v:.2f}"
    return str(v).replace("|", "\\|")


def markdown(table: SweepTable) -> str:
    head = "| " + " | ".join(table.columns) + " |"
    sep = "|" + "|".join("---" for _ in table.columns) + "|"
    body = ["| " + " | ".join(_md_cell(v, c) for v, c in zip(row, table.columns)) + " |" for row in table.rows]
    return "\n".join([head, sep, *body])


def plot_sweep(table: SweepTable, out_png: str | os.PathLike) -> Path | None:
    """Scatter of each point's revdict MRR (head and cosine) against its STS-B dev Spearman (against
    the point's number when STS-B dev was not measured); None when no point has a revdict score."""
    pts = [r for r in table.results if r["revdict_head_mrr"] is not None or r["revdict_cosine_mrr"] is not None]
    if not pts:
        return None
    by_stsb = all(r["stsb_dev"] is not None for r in pts)
    xkey = "stsb_dev" if by_stsb else "position"
    fig = new_figure(7.5, 5.0)
    ax = fig.add_subplot(1, 1, 1)
    for key, marker, name in (("revdict_head_mrr", "o", "head mode"), ("revdict_cosine_mrr", "^", "cosine mode")):
        sel = [r for r in pts if r[key] is not None]
        ax.scatter([r[xkey] for r in sel], [r[key] for r in sel], marker=marker, label=name, alpha=0.8)
        for r in sel:
            ax.annotate(str(r["position"]), (r[xkey], r[key]), fontsize=7, xytext=(3, 2), textcoords="offset points")
    base = table.baseline
    if by_stsb and base and base["stsb_dev"] is not None:
        ax.axvline(base["stsb_dev"], color="grey", linestyle="--", linewidth=1, label="untrained STS-B dev")
    if base and base["revdict_mrr_cosine"] is not None:
        ax.axhline(base["revdict_mrr_cosine"], color="grey", linestyle=":", linewidth=1,
                   label="untrained revdict MRR (cosine)")
    ax.set_xlabel("STS-B dev Spearman x 100 (best trained candidate)" if by_stsb else "point (as numbered in the table)")
    ax.set_ylabel("reverse-dictionary MRR (leave-one-out)")
    ax.set_title(f"sweep {table.sweep}: points numbered as in the table")
    ax.legend(fontsize=8)
    return save_figure(fig, out_png)


def _pm(stat: tuple[float | None, float | None, int] | None) -> str:
    if not stat or stat[0] is None:
        return ""
    mean, sd, n = stat
    return f"{mean:.4f} ± {sd:.4f} (n={n})" if sd is not None else f"{mean:.4f} (n={n})"


def seeds_section(sweep: str, table: SweepTable, root: str | os.PathLike | None = None) -> list[str]:
    """Markdown lines for a sweep with ``aggregate: mean_over_seeds`` (:mod:`defsentflow.sweep_seeds`):
    settings ranked by their dev mean over seeds, test figures as mean ± sd beside them; else []."""
    cat = Catalog(root)
    spec = _spec(cat, sweep)
    if not spec or spec.get("aggregate") != "mean_over_seeds":
        return []
    ranked = seed_rows(cat, table.results, spec)
    select = spec.get("select_on") or "the dev selection figure"
    figures = list(spec.get("report_on") or [])
    head = ["#", "setting", "seeds", f"dev {select} mean ± sd", *[f"test {f} mean ± sd" for f in figures]]
    body = [" | ".join([str(i), ", ".join(f"{k}={v}" for k, v in g["setting"].items()).replace("|", "\\|"),
                        str(g["n_dev"]), _pm((g["dev_mean"], g["dev_sd"], g["n_dev"])),
                        *[_pm(g["test"].get(f)) for f in figures]]) for i, g in enumerate(ranked, 1)]
    return [f"## Mean over seeds (axis `{spec.get('seed_key', 'defsent.seed')}`)", "",
            "As DefSent picks its learning rate: the setting with the highest dev mean over its seeds is chosen "
            "(row 1; a setting missing a seed's dev figure ranks last); its test figures are reported as mean ± sd "
            "(sample sd) over the same seeds. Test columns are never ranked on.", "",
            "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|", *[f"| {b} |" for b in body], ""]


def write_sweep_report(sweep: str, root: str | os.PathLike | None = None) -> SweepReport:
    """Write ``sweep.md`` (the table, what each column means) and ``sweep.png``."""
    table = sweep_table(sweep, root)
    out = root_place(data_root(root), "reports", "sweeps", check_identifier(sweep, "sweep name"))
    out.mkdir(parents=True, exist_ok=True)
    chart = plot_sweep(table, out / "sweep.png")
    done = sum(1 for r in table.results if r["status"] == "completed")
    metric = next((r["selection_metric"] for r in table.results if r["selection_metric"]), "the selection metric")
    lines = [
        f"# Sweep {sweep}",
        "",
        f"{len(table.results)} points, {done} completed. Each point is a pipeline run (`run_id` in the catalog's "
        "`sweep_points`). Scores are those of the point's best trained candidate (PST step >= 1, chosen by "
        f"{metric}), so a point whose selection kept the untrained encoder (winner step 0) still shows what "
        "training did. Rows are ranked by the dev selection figure; test-split columns are reported, never "
        "ranked on. STS-B dev: Spearman x 100; Δ: against the untrained encoder; revdict: leave-one-out MRR on "
        "unseen queries (definitions whose text the model never trained on).",
        "",
        markdown(table),
        "",
    ]
    if chart is not None:
        lines += [f"![sweep {sweep}]({chart.name})", ""]
    lines += seeds_section(sweep, table, root)
    failed = [r for r in table.results if r["status"] == "failed"]
    if failed:
        lines += ["Failed points:", ""] + [f"- {r['point_id']} ({r['label']}): {r['note']}" for r in failed] + [""]
    params = {r["point_id"]: json.loads(r["params"]) if isinstance(r["params"], str) else r["params"]
              for r in table.results}
    lines += ["Values per point (dotted keys into the pipeline config):", "", "```json",
              json.dumps(params, indent=1, sort_keys=True, default=str), "```", ""]
    text = "\n".join(lines)
    md = out / "sweep.md"
    with atomic_path(md) as tmp:
        tmp.write_text(text)
    return SweepReport(sweep=sweep, markdown_path=md, chart_path=chart, markdown=text)
