"""The first screen of a run report: what was trained, the model the run selected and where it
is, its headline figures against the untrained encoder (with deltas), and the chart of them.

Everything here reads the catalog (runs, pst_runs, pst_steps, models and the leaderboard); the
chart is drawn only when there are figures to draw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from defsentflow.eval_tasks import HEAD_TOKENS
from defsentflow.model.ids import base_model_id
from defsentflow.report.leaderboard import Leaderboard, format_delta, format_number
from defsentflow.report.markup import md_code, md_text
from defsentflow.report.plots import plot_scores
from defsentflow.ties import tied

__all__ = ["RunFacts", "run_facts", "summary_section", "trained_sentence", "why_sentence"]

_METHODS = {"defsent": "DefSent", "defsent_plus": "DefSent+"}


@dataclass(frozen=True)
class RunFacts:
    """What a report needs to know about a run beyond its scores."""

    run: dict[str, Any]
    config: dict[str, Any]
    status: str
    error: str | None
    pst: dict[str, Any] | None              # the pst_runs row
    selected_ids: tuple[str, ...]           # ids of the model the run selected (pst-<run>, or a defsent model)
    untrained_ids: tuple[str, ...]          # ids the untrained encoder is known by
    best_trained_id: str | None             # PST's best trained candidate (when the untrained one was kept)
    selected_path: str | None
    steps: tuple[dict[str, Any], ...] = ()  # pst_steps rows of the run: each step's best candidate


def _config(run: dict[str, Any]) -> dict[str, Any]:
    c = run.get("config")
    try:
        c = json.loads(c) if isinstance(c, str) else c
    except ValueError:
        return {}
    return c if isinstance(c, dict) else {}


def _note(run: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The run's note as JSON (pipeline summary, process owner) or as text."""
    note = run.get("note")
    if not note:
        return None, None
    try:
        data = json.loads(note)
    except ValueError:
        return None, str(note)
    return (data, None) if isinstance(data, dict) else (None, str(note))


def run_facts(rows: Callable[..., list[dict[str, Any]]], run: dict[str, Any], status: str | None = None) -> RunFacts:
    """Collect the facts of ``run`` through ``rows(sql, **params)`` (``$run_id`` is bound)."""
    config = _config(run)
    data, text = _note(run)
    final = status or run.get("status") or "unknown"
    error = (data or {}).get("error") or (text if final == "failed" else None)
    pst = next(iter(rows("SELECT * FROM pst_runs WHERE run_id = $run_id")), None)
    selected: list[str] = []
    if pst and (pst.get("winner_model_id") or pst.get("model_id")):  # the chosen model's own id (pst-<run> names it)
        selected.append(pst.get("winner_model_id") or pst["model_id"])
    selected += [r["model_id"] for r in rows("SELECT model_id FROM models WHERE run_id = $run_id AND method IN "
                                             "('pst', 'defsent', 'defsent_plus') ORDER BY created_at DESC")]
    path = next((r["path"] for r in rows("SELECT path FROM models WHERE model_id = $m", m=selected[0])), None) \
        if selected else None
    untrained = [r["model_id"] for r in rows("SELECT DISTINCT model_id FROM pst_steps WHERE run_id = $run_id AND step = 0")]
    section = config.get("pst") or config.get("defsent") or {}
    if section.get("base_model"):
        base = section["base_model"]
        if config.get("pst_from") in ("surrogate", "pretrain"):
            base = None  # the run trained its own starting encoder: no catalog name for it here
        if base:
            untrained.append(base_model_id(base))
    best = None
    if pst and pst.get("winner_step") == 0:
        best = next((r["model_id"] for r in rows(
            "SELECT model_id FROM pst_steps WHERE run_id = $run_id AND step >= 1 AND chosen "
            "ORDER BY selection_score DESC NULLS LAST LIMIT 1")), None)
    steps = tuple(rows("SELECT step, selection_metric, max(selection_score) AS score FROM pst_steps "
                       "WHERE run_id = $run_id AND chosen GROUP BY step, selection_metric ORDER BY step")) if pst else ()
    return RunFacts(run, config, final, error, pst, tuple(dict.fromkeys(selected)), tuple(dict.fromkeys(untrained)),
                    best, path, steps)


_METRIC_WORDS = {"stsb-dev": "STS-B dev Spearman", "revdict-mrr": "reverse-dictionary dev MRR",
                 "wordpred-dev-mrr": "word-prediction dev MRR"}


def why_sentence(pst: dict[str, Any], steps: Sequence[dict[str, Any]]) -> str | None:
    """Why the run returned its model, as a person would say it (Markdown, strings escaped).

    Example:
        >>> why_sentence({"winner_step": 1, "selection_metric": "stsb-dev"},
        ...              [{"step": 0, "score": 75.0}, {"step": 1, "score": 80.0}, {"step": 2, "score": 79.0}])
        'Step 1 scored best on STS-B dev Spearman (80.00), ahead of the untrained encoder (75.00) and step 2 (79.00).'
    """
    win = pst.get("winner_step")
    if win is None:
        return md_text(pst["reason"]) if pst.get("reason") else None
    metric = pst.get("selection_metric") or next((s.get("selection_metric") for s in steps), None)
    words = md_text(_METRIC_WORDS.get(metric, metric or "the selection figure"))
    if pst.get("selection_rule") == "mean_over_seeds":   # steps compared by a mean the rows do not hold
        return md_text(pst["reason"]) if pst.get("reason") else None
    scores = {s["step"]: s.get("score") for s in steps}
    if not scores or win not in scores:
        return md_text(pst["reason"]) if pst.get("reason") else None
    name = lambda k: "the untrained encoder" if k == 0 else f"step {k}"  # noqa: E731
    others = [f"{name(k)} ({format_number(v)})" for k, v in sorted(scores.items()) if k != win and v is not None]
    rivals = ", ".join(others[:-1]) + (" and " if len(others) > 1 else "") + (others[-1] if others else "")
    if win == 0:
        ties = [f"step {k}" for k, v in sorted(scores.items()) if k and tied(v, scores[0])]
        tie = (f"; {' and '.join(ties)} tied it at the reported precision, and a tie keeps the earlier model"
               if ties else "")
        return (f"No trained step beat the untrained encoder on {words} ({format_number(scores[0])}"
                + (f"; {rivals}" if rivals else "") + f"{tie}), so the untrained encoder was kept.")
    return (f"Step {win} scored best on {words} ({format_number(scores[win])})"
            + (f", ahead of {rivals}" if rivals else "") + ".")


def trained_sentence(facts: RunFacts) -> str:
    """'DefSent+ with PST (2 steps) from `minilm` on the dictionary `sample`: ...' or what else ran."""
    c = facts.config
    section = c.get("pst") or (c if "grid" in c and "steps" in c else None)
    if section:
        grid = md_text(", ".join(f"{g.get('pooling')}/{g.get('entry_encoding')}" for g in section.get("grid") or []))
        steps = section.get("steps")
        parts = [f"{steps} step{'' if steps == 1 else 's'}", f"grid {grid}" if grid else None,
                 f"lr {format_number(section.get('lr'))}" if section.get("lr") is not None else None,
                 f"temperature {section['temperature']:g}" if section.get("temperature") else None,
                 f"batch {section.get('batch_size')}" if section.get("batch_size") else None,
                 f"at most {section['max_train_entries']:,} training entries" if section.get("max_train_entries") else None,
                 f"seeds {md_text(section.get('seeds'))}" if section.get("seeds") else None,
                 f"selection by {md_text(section.get('selection'))}" if section.get("selection") else None]
        head = (f"DefSent+ with Progressive Separate Training (PST) from {md_code(section.get('base_model'))} "
                f"on the dictionary {md_code(section.get('dictionary'))}")
    elif c.get("defsent"):
        d = c["defsent"]
        parts = [f"{md_text(d.get('pooling'))} pooling", f"{md_text(d.get('entry_encoding'))} entries",
                 f"lr {md_text(format_number(d.get('lr')))}", f"{md_text(d.get('epochs'))} epoch(s)"]
        head = (f"{md_text(_METHODS.get(d.get('method'), d.get('method')))} from {md_code(d.get('base_model'))} "
                f"on {md_code(d.get('dictionary'))}")
    else:
        model = c.get("model") or c.get("model_id")
        return f"Nothing trained: a {md_code(facts.run.get('flow'))} run" + (f" of {md_code(model)}." if model else ".")
    start = {"surrogate": " (starting from the surrogate trained on harvested pairs)",
             "pretrain": " (starting from the encoder it pretrained)"}.get(c.get("pst_from"), "")
    return head + start + ": " + ", ".join(p for p in parts if p) + "."


def _own_head(column: str) -> str:
    """A figure column without its head tokens (:data:`defsentflow.eval_tasks.HEAD_TOKENS`)."""
    return re.sub("_(?:" + "|".join(HEAD_TOKENS) + ")(?=_)", "", column)


def _merged(board: Leaderboard, ids: Sequence[str], pooling: str | None) -> dict[str, Any] | None:
    """One row of values for a model known by ``ids`` (rows of an older catalog may not be merged)."""
    rows = [r for r in board.rows if set(ids) & set(r["aliases"])]
    if pooling:
        rows = [r for r in rows if r.get("pooling") in (pooling, None)] or rows
    if not rows:
        return None
    out = dict(rows[0])
    for r in rows[1:]:
        for c in board.columns:
            if out.get(c) is None:
                out[c] = r.get(c)
    return out


def summary_section(facts: RunFacts, board: Leaderboard, image: Callable[[str], Any],
                    markdown_table: Callable[..., str]) -> list[str]:
    """Markdown of the first screen; draws ``img/headline.png`` through ``image(rel) -> path``."""
    run, name = facts.run, facts.config.get("name")
    lines = [f"# {md_text(name) + ': ' if name else ''}run {md_code(run['run_id'])}", ""]
    ended = run.get("ended_at")
    when = f"started {str(run.get('started_at'))[:19]}" + (f", ended {str(ended)[:19]}" if ended else "")
    lines += [f"**Status: {md_text(facts.status)}** ({md_text(run.get('flow'))} run, {md_text(when)}, "
              f"code {md_text(run.get('code_version'))})", ""]
    if facts.error:
        lines += [f"**Error:** {md_text(facts.error)}", ""]
    if run.get("promotion"):  # the gate's decision (registry.gate): its sentence holds both figures
        alias = f"{md_code(name + '@champion')} " if name else ""
        why = f" ({run['promotion_why']})" if run.get("promotion_why") else ""
        lines += [f"**Champion:** {alias}{md_text(run['promotion'] + why)}: {md_text(run.get('promotion_note') or '')}", ""]
    lines += [f"**Trained:** {trained_sentence(facts)}", ""]
    pst = facts.pst or {}
    if facts.selected_ids:
        sel = facts.selected_ids[0]
        others = [a for r in board.rows if sel in r["aliases"] for a in r["aliases"] if a != sel]
        aka = f" (also {', '.join(md_code(o) for o in others)})" if others else ""
        lines += [f"**Selected model:** {md_code(sel)}{aka}" + (f", step {md_text(pst['winner_step'])}"
                                                               if pst.get("winner_step") is not None else ""), ""]
        if facts.selected_path:
            lines += [f"**Where:** {md_code(facts.selected_path)}", ""]
        why = why_sentence(pst, facts.steps)
        if why:
            lines += [f"**Why:** {why}", ""]
    eval_pooling = (facts.config.get("eval") or {}).get("pooling")
    selected = _merged(board, facts.selected_ids, eval_pooling) if facts.selected_ids else None
    untrained = _merged(board, facts.untrained_ids, eval_pooling) if facts.untrained_ids else None
    if untrained:  # its head figures scored with the run's head stand beside the trained model's
        untrained.update({_own_head(c): v for c, v in untrained.items() if _own_head(c) != c and v is not None})
    best = _merged(board, [facts.best_trained_id], eval_pooling) if facts.best_trained_id else None
    series = [(label, r) for label, r in (("untrained", untrained), ("selected", selected), ("best trained", best)) if r]
    cols = [c for c in board.columns if c != "n_avg" and _own_head(c) == c and any(r.get(c) is not None for _, r in series)]
    lines += ["## Headline figures", ""]
    if not series or not cols:
        return lines + ["No scores recorded for the selected or the untrained model "
                        "(`defsentflow eval MODEL --tasks ...`).", ""]
    header = ["score", "split", *(f"{label} ({r['model_id']})" for label, r in series)]
    table = []
    for c in cols:
        row = [md_code(c), board.splits.get(c, ""), *(r.get(c) for _, r in series)]
        if selected and untrained:
            row.append(format_delta(untrained.get(c), selected.get(c)))
        table.append(row)
    if selected and untrained:
        header.append("delta (selected - untrained)")
    lines += [markdown_table(header, table), "",
              "STS columns: Spearman x 100 ('all' setting); `*_mrr`: reverse-dictionary mean reciprocal rank "
              "(0 to 1; head, cosine and hybrid modes); dev-split figures are what selection reads, the rest "
              "are test figures.", ""]
    chart = [{"label": f"{label}: {r['model_id']}", **{c: r.get(c) for c in cols}} for label, r in series]
    plot_scores(chart, image("img/headline.png"), columns=cols)
    lines += ["![Headline figures: untrained and selected model](img/headline.png)", ""]
    return lines
