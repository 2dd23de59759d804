"""The lines a pipeline run ends with: its stages (reused or computed) and its headline figures.

``defsentflow run`` prints them on the terminal and into the run's log; a deployment run prints them
into its log and the Prefect UI. Everything is read from the catalog, so both say the same.

Example:
    >>> for line in summary_lines(result, seconds=42.0, log_path=Path("storage/logs/demo-1.log")):
    ...     print(line)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from defsentflow.report.leaderboard import format_number
from defsentflow.run_log import elapsed
from defsentflow.storage import Catalog

__all__ = ["OUTCOMES", "figure_lines", "run_outcome", "run_outcomes", "stage_lines", "summary_lines"]

OUTCOMES = {
    "unchanged": "inputs, config and code as in the last completed run: nothing ran",
    "promoted": "the run's model won on the dev figure (or is the config's first): <name>@champion names it now",
    "not-comparable": "the champion's figure is of another name (protocol): it stays, the run's model is not promoted",
    "reused": "every stage found done by its content key: nothing computed",
    "kept": "the run's model did not beat the champion by promote.min_delta (a tie keeps it): it stays",
}
"""What a finished run can say beyond 'completed' (the flow's final state name and tags, see
``flows/pipeline.py``): one word each, with the sentence that explains it, the most telling first.
The promotion gate's decisions (:mod:`defsentflow.registry.gate`) are among them."""


def stage_lines(run_id: str) -> list[str]:
    """Each stage the run recorded: ``cached`` (found by its content key) or ``completed`` (computed)."""
    rows = Catalog().query("SELECT stage, status, seconds, note FROM stages WHERE run_id = ? ORDER BY started_at",
                           [run_id])
    cached = sum(1 for r in rows if r["status"] == "cached")
    out = [f"stages:   {len(rows)}: {cached} reused, {len(rows) - cached} computed"]
    for r in rows:
        took = f"{r['seconds']:.1f} s" if r["seconds"] is not None else ""
        out.append(f"  {r['status']:<10} {r['stage']:<18} {took:>9}  {r['note'] or ''}".rstrip())
    return out


def run_outcomes(result: Mapping[str, Any]) -> list[str]:
    """Every outcome of the run (keys of :data:`OUTCOMES`, in its order): ``unchanged``
    (``--only-if-changed`` found nothing new), ``reused`` (every stage was a cache hit), and the
    promotion gate's decision (``promoted``, ``kept``, ``not-comparable``)."""
    if result.get("status") == "unchanged":
        return ["unchanged"]
    found = {(result.get("promotion") or {}).get("decision")}
    rows = Catalog().query("SELECT status FROM stages WHERE run_id = ?", [result["run_id"]])
    if rows and all(r["status"] == "cached" for r in rows):
        found.add("reused")
    return [o for o in OUTCOMES if o in found]


def run_outcome(result: Mapping[str, Any]) -> str | None:
    """The run's most telling outcome (the first of :func:`run_outcomes`), or None: a plain completed run."""
    return next(iter(run_outcomes(result)), None)


def figure_lines(run_id: str, limit: int = 8) -> list[str]:
    """The headline figures (as the leaderboard names them) of every model this run evaluated:
    one column per model, dev figures first."""
    rows = Catalog().query('SELECT model_id, "column", split, value FROM model_scores WHERE run_id = ? '
                           "ORDER BY split <> 'dev', \"column\"", [run_id])
    models = list(dict.fromkeys(r["model_id"] for r in rows))
    columns = list(dict.fromkeys(r["column"] for r in rows))[:limit]
    if not models:
        return []
    value = {(r["model_id"], r["column"]): r["value"] for r in rows}
    width = max(len(c) for c in columns)
    cells = [[format_number(value.get((m, c))) for m in models] for c in columns]
    widths = [max(len(m), *(len(row[i]) for row in cells)) for i, m in enumerate(models)]
    out = ["figures:  " + " " * (width - 8) + "  ".join(m.rjust(w) for m, w in zip(models, widths))]
    out += [f"  {c:<{width}}  " + "  ".join(v.rjust(w) for v, w in zip(row, widths)) for c, row in zip(columns, cells)]
    return out


def summary_lines(result: Mapping[str, Any], *, seconds: float, log_path: Path) -> list[str]:
    """The whole closing block of a finished run (``result``: what :func:`run_pipeline` returns)."""
    run_id = result["run_id"]
    outcome = run_outcome(result)
    status = result["status"]
    if outcome not in (None, status):  # the gate's decision is explained on its own line below
        status = f"{status}, {outcome}" + ("" if (result.get("promotion") or {}).get("decision") == outcome
                                           else f": {OUTCOMES[outcome]}")
    out = ["", *stage_lines(run_id), "", *figure_lines(run_id), "",
           f"run:      {run_id} ({status}) in {elapsed(seconds)}"]
    if result.get("selected"):
        sel = result["selected"]
        out.append(f"selected: {sel['model_id']} (step {sel['winner_step']}): {sel['model_dir']}")
    if result.get("promotion"):
        out.append(f"champion: {result['promotion']['alias']} {result['promotion']['decision']}: "
                   f"{result['promotion']['reason']}")
    if result.get("report"):
        rep = result["report"]
        out.append(f"report:   {rep.get('html_path') or rep.get('markdown_path') or rep}")
    out.append(f"scores:   defsentflow leaderboard   (catalog: {Catalog().path}; defsentflow sql \"SELECT ...\")")
    out.append(f"log:      {log_path}")
    return out
