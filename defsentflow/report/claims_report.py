"""The claims table in text, Markdown and a picture (rows of the catalog's ``claims`` view).

``claims_table`` gives the columns the CLI prints and the report writes: the claim, the paper's
figure or direction, the measured figure (mean ± sd over seeds per arm), the stated test's
``effect`` (the deciding pair's mean paired difference, later minus earlier arm), ``ci_low`` /
``ci_high`` (its two-sided 90% t interval: the lower end is the one-sided 95% bound), ``p`` (the
deciding one-sided paired t-test) and ``p (Holm)`` (that p adjusted in the run's one family of both
directions of every tested pair: the figure that decided the verdict; a contradicted row's are the
opposite test's, marked "effect < 0"), the ``verdict`` (:mod:`defsentflow.claims.judge`) and the time
of the runs it reads. ``plot_claims`` draws one panel per measured claim:
each seed's figure per arm, with the arm's mean and sd. ``claims_section`` is the run report's
"Claims" section, present for a claims run (``defsentflow report <claims run id>``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from defsentflow.claims.judge import digits
from defsentflow.entryspace.figures import new_figure, save_figure

__all__ = ["CLAIMS_TEST", "CLAIM_COLUMNS", "claims_section", "claims_table", "departures_line", "plot_claims"]

CLAIM_COLUMNS = ("claim", "paper", "measured (mean ± sd over seeds)", "n", "effect", "ci_low", "ci_high", "p",
                 "p (Holm)", "verdict", "minutes")
CLAIMS_TEST = ("Each claim is tested on every adjacent pair of its arms (an ordered claim such as c < b < a on c -> b "
               "and b -> a). Per pair: effect, the mean over seeds of the paired difference (the later arm minus the "
               "earlier); ci_low, ci_high, its two-sided 90% t interval (not adjusted); p, the one-sided paired t-test "
               "of effect > 0 (n - 1 degrees of freedom), and the opposite test (effect < 0). The family: both "
               "directions of every pair of every claim that can be tested here (a claim that cannot, by its checks, "
               "adds none), adjusted by Holm's method as one family, so the chance of any wrong holds or "
               "contradicted stays at most 0.05. Verdict: holds (every pair's adjusted p < 0.05), contradicted (some "
               "pair's adjusted opposite p < 0.05), not supported (neither), or cannot be tested here (too few "
               "seeds, an arm at its metric's floor, not above chance or not above the untrained encoder on its own "
               "metric, or a control that cannot test the claim, with the reason). The row shows the test that decided "
               "it: p and p (Holm) of the weakest pair, or of a contradicted claim's most contradicted pair (marked "
               "effect < 0); the note lists every step. Every verdict is about the "
               "control it was measured on, never the paper's setting: its scope is printed with it.")


def departures_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """The scope of the verdicts: the control's departures from the paper, from the rows (one list per run)."""
    for r in rows:
        d = r.get("departures")
        found = json.loads(d) if isinstance(d, str) else list(d or [])
        if found:
            scope = r.get("scope") or "on this control"
            return f"Scope: every verdict is {scope}, which departs from the paper in: " + "; ".join(found) + "."
    return ""

def _series(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    s = row.get("series")
    return json.loads(s) if isinstance(s, str) else list(s or [])


def _fig(row: Mapping[str, Any], key: str) -> str:
    """``effect`` / ``ci_low`` / ``ci_high`` with the decimals of the claim's figures (signed)."""
    v = row.get(key)
    if v is None:
        return ""

    n = digits(max((abs(x["mean"] or 0.0) for x in _series(row)), default=abs(v)))
    return f"{v:+.{n}f}"


def _p(v: Any, against: bool = False) -> str:
    """A p value; ``against``: the opposite test's (effect < 0), which decided a contradicted row."""
    if v is None:
        return ""
    return (f"{v:.3f}" if v >= 0.001 else "<0.001") + (" (effect < 0)" if against else "")


def claims_table(rows: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """(columns, rows) of the claims table, from ``claims`` view rows."""
    out = []
    for r in rows:
        measured = r.get("measured") or ""
        if r.get("note"):
            measured = f"{measured} ({r['note']})" if measured else r["note"]
        minutes = None if r.get("seconds") is None else round(float(r["seconds"]) / 60.0, 1)
        against = str(r.get("verdict") or "").startswith("contradicted")
        out.append((r["statement"], r["paper"], measured, r.get("n"), _fig(r, "effect" if "effect" in r else "diff_mean"),
                    _fig(r, "ci_low"), _fig(r, "ci_high"), _p(r.get("p"), against), _p(r.get("p_holm"), against), r.get("verdict"),
                    minutes))
    return CLAIM_COLUMNS, out


def plot_claims(rows: Sequence[Mapping[str, Any]], out_png: str | os.PathLike) -> Path | None:
    """One panel per measured claim: per-seed figures of each arm, mean ± sd; None if nothing to draw."""
    measured = [r for r in rows if any(x.get("values") for x in _series(r))]
    if not measured:
        return None
    cols = min(4, len(measured))
    nrows = (len(measured) + cols - 1) // cols
    fig = new_figure(3.4 * cols, 2.9 * nrows)
    for i, r in enumerate(measured):
        ax = fig.add_subplot(nrows, cols, i + 1)
        series = _series(r)
        for x, s in enumerate(series):
            ax.scatter([x] * len(s["values"]), s["values"], s=14, alpha=0.6, color="tab:blue")
            if s["mean"] is not None:
                ax.errorbar([x + 0.15], [s["mean"]], yerr=[s["sd"] or 0.0], fmt="o", color="black", capsize=3)
        ax.set_xticks(range(len(series)), [s["label"] for s in series], rotation=20, fontsize=7, ha="right")
        ax.set_title(f"{r['statement']}\n({r.get('verdict')})", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    return save_figure(fig, out_png)


def claims_section(rows: Callable[..., list[dict[str, Any]]], markdown_table: Callable[..., str],
                   image: Callable[[str], Path]) -> list[str]:
    """The run report's "Claims" section for a claims run (empty for any other run)."""
    found = rows("SELECT * FROM claims WHERE claims_run_id = $run_id ORDER BY position")
    if not found:
        return []
    columns, table = claims_table(found)
    lines = ["## Claims", "",
             "Each claim of the papers, measured here: per arm the mean ± sd over seeds, in the order the paper "
             "says increases. " + CLAIMS_TEST + " Minutes: the arms' runs each claim reads (shared arms counted "
             "in full).", "",
             markdown_table(columns, table), ""]
    scope = departures_line(found)
    if scope:
        lines += [scope, ""]
    rel = "img/claims.png"
    if plot_claims(found, image(rel)) is not None:
        lines += [f"![Claims: per-seed figures per arm]({rel})", ""]
    return lines
