"""``defsentflow leaderboard`` on a terminal: the headline figures in 120 columns, every one with ``--wide``.

A figure's full name (``revdict_test_unseen_q500_splitcands_cosine_mrr``) is a column name for SQL,
not a heading: the table groups figures under a two-line heading (task and split above, what tells
the columns of a group apart below: the mode) and says once, below the table, what all columns of
a task share (``revdict: unseen q500 splitcands, mrr``). Columns are added while the table fits the
width: the figure the rows are sorted by first, then the reported (test) figures, then the other
dev figures; the rest are counted in the last line (``--wide`` prints them all, with their full
names). Every figure of a column has the same decimals (:func:`column_decimals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from defsentflow.cli.table import format_table, printable
from defsentflow.report.leaderboard import short_labels
from defsentflow.storage.leaderboard_view import column_decimals

__all__ = ["board_lines", "cell"]

WIDTH = 120


def cell(row: dict[str, Any], column: str) -> str:
    """One figure as every row of its column shows it: fixed decimals, a seed mean as ``mean ± sd``."""
    value, sd = row.get(column), row.get(column + "_sd")
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return printable(str(value))
    d = column_decimals(column)
    return f"{value:.{d}f}" + ("" if sd is None else f" ± {sd:.{d}f}")


def _render(rows: Sequence[dict[str, Any]], ident: Sequence[str], columns: Sequence[str],
            labels: dict[str, tuple[str, str]]) -> list[str]:
    """The table with a two-line heading: each group's heading over its columns."""
    groups: list[tuple[str, list[str]]] = []
    for c in columns:
        if groups and groups[-1][0] == labels[c][0]:
            groups[-1][1].append(c)
        else:
            groups.append((labels[c][0], [c]))
    top, sub = [""] * len(ident), list(ident)
    for group, cols in groups:
        if all(not labels[c][1] for c in cols):  # nothing to tell its columns apart: task above, split below
            family, _, split = group.partition(" ")
            top += [family] + [""] * (len(cols) - 1)
            sub += [split] + [""] * (len(cols) - 1)
        else:
            top += [group] + [""] * (len(cols) - 1)
            sub += [labels[c][1] for c in cols]
    body = [[printable(str(r.get(k) or "")) for k in ident] + [cell(r, c) for c in columns] for r in rows]
    widths = [max([len(sub[i])] + [len(b[i]) for b in body]) for i in range(len(sub))]
    i = len(ident)  # a group's heading wider than its columns widens its last column
    for _, cols in groups:
        span = sum(widths[i:i + len(cols)]) + 2 * (len(cols) - 1)
        widths[i + len(cols) - 1] += max(0, len(top[i]) - span)
        i += len(cols)
    i, spans = len(ident), ["".ljust(w) for w in widths[:len(ident)]]
    for _, cols in groups:
        span = sum(widths[i:i + len(cols)]) + 2 * (len(cols) - 1)
        spans.append(top[i].ljust(span))
        i += len(cols)
    head = "  ".join(spans)
    lines = [head.rstrip(), "  ".join(s.ljust(w) for s, w in zip(sub, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) if j < len(ident) else v.rjust(w) for j, (v, w) in enumerate(zip(b, widths))).rstrip()
              for b in body]
    return lines


def board_lines(board: Any, *, width: int = WIDTH, wide: bool = False) -> list[str]:
    """The leaderboard (:class:`~defsentflow.report.leaderboard.Leaderboard`) as lines of text."""
    rows, columns = list(board.rows), list(board.columns)
    if wide:
        ident = ("model_id", "pooling", "method")
        body = [[r.get(k) for k in ident] + [cell(r, c) for c in columns] + [", ".join(a for a in r["aliases"]
                                                                                    if a != r["model_id"])]
                for r in rows]
        return format_table([*ident, *columns, "also_known_as"], body).splitlines()
    # a figure's sd filed as its own metric (bbc-topics' acc_sd) is shown beside it, as mean ± sd
    columns = [c for c in columns if not c.endswith("_sd") or c.removesuffix("_sd") not in columns]
    poolings = {r.get("pooling") for r in rows}
    ident = ("model_id", "pooling", "method") if len(poolings) > 1 else ("model_id", "method")
    labels, notes = short_labels(columns)
    priority = list(dict.fromkeys([*([board.sort_by] if board.sort_by in columns else []),
                                   *(c for c in columns if board.splits.get(c) == "test"), *columns]))
    shown: list[str] = []
    for c in priority:
        trial = [x for x in columns if x in shown or x == c]
        if max(len(line) for line in _render(rows, ident, trial, labels)) <= width or not shown:
            shown = trial
    lines = _render(rows, ident, shown, labels)
    if len(poolings) == 1 and None not in poolings:
        notes.insert(0, f"pooling: {next(iter(poolings))}")
    holders = sorted({f"{a} = {r['model_id']}" for r in rows for a in r.get("holds", ())})
    if holders:
        notes.insert(0, "aliases: " + ", ".join(holders))
    hidden = len(columns) - len(shown)
    more = f"{hidden} more figure{'s' if hidden > 1 else ''}; " if hidden else ""
    lines += ["", *(["; ".join(notes)] if notes else []),
              f"{more}every figure by its full name and each model's other ids: defsentflow leaderboard --wide"]
    return lines
