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

from defsentflow.registry.gate import shown_decision
from defsentflow.report.leaderboard import format_number
from defsentflow.run_log import elapsed
from defsentflow.storage import Catalog

__all__ = ["OUTCOMES", "figure_lines", "run_outcome", "run_outcomes", "stage_lines", "summary_lines"]

OUTCOMES = {
    "unchanged": "inputs, config and code as in the last completed run: nothing ran",
    "promoted": "the run's model won on the dev figure (or is the config's first): <name>@champion names it now",
    "not-comparable": "the champion's figure is of another name (protocol): it stays, the run's model is not promoted",
    "kept": "the run's model did not beat the champion by promote.min_delta (a tie keeps it), or a rollback took the "
            "alias from it: the champion stays",
    "reused": "every stage found done by its content key: nothing computed",
}
"""What a finished run can say beyond 'completed' (the flow's final state name and tags, see
``flows/pipeline.py``): one word each, with the sentence that explains it, the most telling first.
The promotion gate's decisions (:mod:`defsentflow.registry.gate`) are among them."""


def stage_lines(run_id: str) -> list[str]:
    """Each stage the run recorded: ``cached`` (found by its content key) or ``completed`` (computed);
    none for a run that ran no stage (``unchanged``)."""
    rows = Catalog().query("SELECT stage, status, seconds, note FROM stages WHERE run_id = ? ORDER BY started_at",
                           [run_id])
    if not rows:
        return []
    cached = sum(1 for r in rows if r["status"] == "cached")
    out = [f"stages:   {len(rows)}: {cached} reused, {len(rows) - cached} computed"]
    for r in rows:
        took = f"{r['seconds']:.1f} s" if r["seconds"] is not None else ""
        out.append(f"  {r['status']:<10} {r['stage']:<18} {took:>9}  {r['note'] or ''}".rstrip())
    return out


def run_outcomes(result: Mapping[str, Any]) -> list[str]:
    """Every outcome of the run (keys of :data:`OUTCOMES`, in its order): ``unchanged``
    (``--only-if-changed`` found nothing new), ``reused`` (every stage was a cache hit), and the
    promotion gate's decision (``promoted``, ``kept``, ``not-comparable``). A run kept because its model
    is the champion already says ``reused`` first (nothing changed); kept for any other reason (worse,
    tied, rolled back), ``kept``."""
    if result.get("status") == "unchanged":
        return ["unchanged"]
    promotion = result.get("promotion") or {}
    found = {promotion.get("decision")}
    rows = Catalog().query("SELECT status FROM stages WHERE run_id = ?", [result["run_id"]])
    if rows and all(r["status"] == "cached" for r in rows):
        found.add("reused")
    order = list(OUTCOMES)
    if promotion.get("why") == "re-run of the champion":
        order.remove("reused")
        order.insert(order.index("kept"), "reused")
    return [o for o in order if o in found]


def run_outcome(result: Mapping[str, Any]) -> str | None:
    """The run's most telling outcome (the first of :func:`run_outcomes`), or None: a plain completed run."""
    return next(iter(run_outcomes(result)), None)


def figure_lines(run_id: str, limit: int = 8) -> list[str]:
    """The headline figures (as the leaderboard names them) of every model this run evaluated:
    one column per model, dev figures first, each headed by its id and, below it, what it is (the
    selected model, the untrained encoder, step N's)."""
    cat = Catalog()
    rows = cat.query('SELECT model_id, "column", split, value FROM model_scores WHERE run_id = ? '
                     "ORDER BY split <> 'dev', \"column\"", [run_id])
    models = list(dict.fromkeys(r["model_id"] for r in rows))
    columns = list(dict.fromkeys(r["column"] for r in rows))[:limit]
    if not models:
        return []
    value = {(r["model_id"], r["column"]): r["value"] for r in rows}
    width = max(len(c) for c in columns)
    cells = [[format_number(value.get((m, c))) for m in models] for c in columns]
    widths = [max(len(m), *(len(row[i]) for row in cells)) for i, m in enumerate(models)]
    roles = _roles(cat, run_id)
    widths = [max(w, len(roles.get(m, ""))) for m, w in zip(models, widths)]
    out = ["figures:  " + " " * (width - 8) + "  ".join(m.rjust(w) for m, w in zip(models, widths)),
           "          " + " " * width + "  ".join(roles.get(m, "").rjust(w) for m, w in zip(models, widths))]
    out += [f"  {c:<{width}}  " + "  ".join(v.rjust(w) for v, w in zip(row, widths)) for c, row in zip(columns, cells)]
    return out


def _roles(cat: Catalog, run_id: str) -> dict[str, str]:
    """Model id -> what it is in the run: ``selected``, ``untrained`` (PST's step 0), ``step N``."""
    rows = cat.query("SELECT model_id, min(step) AS step FROM pst_steps WHERE run_id = ? AND chosen GROUP BY model_id",
                     [run_id])
    roles = {r["model_id"]: "untrained" if r["step"] == 0 else f"step {r['step']}" for r in rows}
    for r in cat.query("SELECT winner_model_id AS model_id, winner_step AS step FROM pst_runs WHERE run_id = ?", [run_id]):
        roles[r["model_id"]] = "selected" + (f" (step {r['step']})" if r["step"] else " (untrained)")
    return roles


def summary_lines(result: Mapping[str, Any], *, seconds: float, log_path: Path, waited: float = 0.0) -> list[str]:
    """The whole closing block of a finished run (``result``: what :func:`run_pipeline` returns);
    ``seconds``: the command's wall time, of which ``waited`` waiting for the catalog (said when >= 1 s)."""
    run_id = result["run_id"]
    outcome = run_outcome(result)
    status = result["status"]
    if outcome not in (None, status):  # the gate's decision is explained on its own line below
        status = f"{status}, {outcome}" + ("" if (result.get("promotion") or {}).get("decision") == outcome
                                           else f": {OUTCOMES[outcome]}")
    out = [""]
    for block in (stage_lines(run_id), figure_lines(run_id)):
        out += [*block, ""] if block else []
    wait = f" ({elapsed(waited)} of it waiting for the catalog)" if waited >= 1 else ""
    out.append(f"run:      {run_id} ({status}) in {elapsed(seconds)}{wait}")
    if result.get("selected"):
        sel = result["selected"]
        out.append(f"selected: {sel['model_id']} (step {sel['winner_step']}): {sel['model_dir']}")
    if result.get("promotion"):
        p = result["promotion"]
        out.append(f"champion: {p['alias']} {shown_decision(p['decision'], p.get('why'))}: {p['reason']}")
    if result.get("report"):
        rep = result["report"]
        out.append(f"report:   {rep.get('html_path') or rep.get('markdown_path') or rep}")
    out.append(f"scores:   defsentflow leaderboard   (catalog: {Catalog().path}; defsentflow sql \"SELECT ...\")")
    out.append(f"log:      {log_path}")
    return out
