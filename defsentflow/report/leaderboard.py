"""The leaderboard: one row per model, one column per headline figure that some model has.

A model is one directory, whatever ids it was filed under (PST's ``pst-<run>`` and the
``dsp-<key>`` it selected; ``base-<hash>`` and the baseline's ``base:<name>``). The rows and
columns come from the one definition in :mod:`defsentflow.storage.leaderboard_view`, the SELECT
the catalog keeps as its ``leaderboard`` view: figures named ``<family>_<split>[_<protocol>]
[_<mode>]_<metric>`` (:func:`defsentflow.eval_tasks.metric_column`), dev figures first, ranked by a
run's selection figure (a dev-split score, never a test score), rounded for display.

Used by ``defsentflow leaderboard``, the run report and the web app.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from defsentflow.eval_tasks import AVERAGE_TASKS, metric_column
from defsentflow.storage.leaderboard_view import gone_models, leaderboard_select
from defsentflow.storage.leaderboard_view import selection_column as select

__all__ = ["Leaderboard", "STS7", "format_delta", "format_mean_sd", "format_number", "load_leaderboard",
           "selection_column", "short_labels"]

# The columns of the seven tasks of the STS average (SentEval's 'all' setting), from the task table.
STS7 = tuple(metric_column(t, "all", "spearman") for t in AVERAGE_TASKS)


def format_number(v: Any) -> str:
    """A number written for its scale: ``86.82``, ``0.5529``, ``1e-05``, ``1,500``; '' for missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    if isinstance(v, float):
        a = abs(v)
        if a == 0:
            return "0"
        if a < 1e-3:
            return f"{v:.2g}"
        if a < 1:
            return f"{v:.4f}"
        if a < 1000:
            return f"{v:.2f}"
        return f"{v:,.0f}"
    return str(v)


_DEFAULT_METRIC = {"spearman"}  # the metric an STS heading leaves out (captions say Spearman x 100)


def _parts(column: str) -> tuple[str, str, list[str], str]:
    """``(family, split word, the words between, metric)`` of a figure's name (a name of fewer than
    three words: itself as the family)."""
    words = column.split("_")
    if len(words) < 3:
        return column, "", [], ""
    family, split, *middle, metric = words
    return family, split, middle, metric


def short_labels(columns: Sequence[str]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Short names for figures shown together: per column (its group: task and split, its own words:
    what tells it from the other columns of its task), and a note per task of the words all its
    columns share (``revdict: unseen q500 splitcands mrr``; Spearman, STS's metric, left out).

    Example:
        >>> short_labels(["stsb_dev_spearman", "revdict_test_unseen_cosine_mrr", "revdict_test_unseen_head_mrr"])
        ({'stsb_dev_spearman': ('stsb dev', ''), 'revdict_test_unseen_cosine_mrr': ('revdict test', 'cosine'),
          'revdict_test_unseen_head_mrr': ('revdict test', 'head')}, ['revdict: unseen mrr'])
    """
    shared: dict[str, list[str]] = {}
    for family in dict.fromkeys(_parts(c)[0] for c in columns):
        words = [(_parts(c)[2], _parts(c)[3]) for c in columns if _parts(c)[0] == family]
        common = [w for w in words[0][0] if all(w in m for m, _ in words)]
        metrics = {m for _, m in words}
        shared[family] = common + ([m for m in metrics if m] if len(metrics) == 1 else [])
    out: dict[str, tuple[str, str]] = {}
    for c in columns:
        family, split, middle, metric = _parts(c)
        own = [w for w in middle if w not in shared[family]]
        if metric and metric not in shared[family]:
            own.append(metric)
        out[c] = (f"{family} {split}".strip(), " ".join(own))
    notes = [f"{family}: {' '.join(w for w in words if w not in _DEFAULT_METRIC)}"
             for family, words in shared.items() if [w for w in words if w not in _DEFAULT_METRIC]]
    return out, notes


def format_mean_sd(mean: float | None, sd: float | None) -> str:
    """``72.31 ± 0.40``: a mean over seeds and its sd, both to the decimals of the mean's scale."""
    if mean is None:
        return ""
    decimals = 2 if abs(mean) > 1.5 else 4
    return f"{mean:.{decimals}f}" + ("" if sd is None else f" ± {sd:.{decimals}f}")


def format_delta(before: float | None, after: float | None) -> str:
    """``after - before`` with its sign, to the decimals of the figures' scale ('+0.10', '-0.0412')."""
    if before is None or after is None:
        return ""
    d = after - before
    decimals = 2 if max(abs(before), abs(after)) > 1.5 else 4
    return f"{d:+.{decimals}f}"


@dataclass(frozen=True)
class Leaderboard:
    """Rows of models with their scores; ``columns`` lists only score columns some row holds.

    Example:
        >>> board = load_leaderboard(Catalog())
        >>> board.sort_by, [r["model_id"] for r in board.rows][:2]
        ('stsb_dev_spearman', ['pst-demo-78a6f724', 'base:all-MiniLM-L6-v2'])
    """

    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    sort_by: str | None
    order_note: str                                        # how the rows are ranked
    splits: dict[str, str] = field(default_factory=dict)   # column -> dev | test
    gone: dict[str, str] = field(default_factory=dict)     # model id -> its folder, gone: rows left out

    IDENTITY = ("model_id", "pooling", "method")

    @property
    def sort_note(self) -> str:
        """How the rows are ranked, and which models were left out because their folders are gone."""
        if not self.gone:
            return self.order_note
        return (self.order_note + "; left out, their folders gone: "
                + ", ".join(f"{m} ({p})" for m, p in sorted(self.gone.items())))

    def restrict(self, model_ids: Iterable[str], gone: Iterable[str] = ()) -> Leaderboard:
        """Only the rows of these models (any of their ids), only columns those rows hold, and only the
        gone models among ``gone`` named."""
        wanted, named = set(model_ids), set(gone)
        rows = tuple(r for r in self.rows if wanted & set(r["aliases"]))
        cols = tuple(c for c in self.columns if any(r.get(c) is not None for r in rows))
        return replace(self, rows=rows, columns=cols, gone={m: p for m, p in self.gone.items() if m in named})

    def table(self, extra: Sequence[str] = ()) -> tuple[list[str], list[list[Any]]]:
        """Header and rows for printing: identity columns, ``extra``, the score columns (a mean over
        seeds as ``mean ± sd``), other ids."""
        cols = [*self.IDENTITY, *extra, *self.columns, "also_known_as"]
        out = []
        for r in self.rows:
            other = [a for a in r["aliases"] if a != r["model_id"]]
            cells = [format_mean_sd(r.get(c), r[c + "_sd"]) if r.get(c + "_sd") is not None else r.get(c)
                     for c in cols[:-1]]
            out.append([*cells, ", ".join(other)])
        return cols, out

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "splits": self.splits, "sort_by": self.sort_by,
                "sort_note": self.sort_note, "gone": self.gone,
                "rows": [{k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in r.items()
                          if k not in ("path",)} for r in self.rows]}


def selection_column(catalog: Any, run_id: str | None = None,
                     dev_columns: Sequence[str] = ()) -> tuple[str | None, str]:
    """The dev-split column a run selected by, and a sentence saying so
    (:func:`defsentflow.storage.leaderboard_view.selection_column`)."""
    with catalog.connect(read_only=catalog.path.is_file()) as con:
        return select(con, dev_columns, run_id)


def load_leaderboard(catalog: Any, *, run_id: str | None = None) -> Leaderboard:
    """Every model with scores, one row per (model, pooling), best selection figure first; a model whose
    folder is gone is left out, named in ``sort_note`` (:func:`~defsentflow.storage.leaderboard_view.gone_models`).

    Args:
        catalog: a :class:`~defsentflow.storage.Catalog`.
        run_id: whose selection figure ranks the rows (default: the newest PST run's).
    """
    if not catalog.path.is_file():
        return Leaderboard((), (), None, "no catalog yet", {})
    with catalog.connect(read_only=True) as con:
        sql, columns, splits, sort_by, note = leaderboard_select(con, run_id)
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        found = [dict(zip(names, r)) for r in cur.fetchall()]
        gone = gone_models(con, catalog.root)
    rows = []
    for r in found:
        if r["model_id"] in gone:
            continue  # its folder is gone: no model to rank (said in the note below)
        r["aliases"] = sorted([r["model_id"], *(a for a in (r.pop("also_known_as") or "").split(", ") if a)])
        r["holds"] = [a for a in r["aliases"] if "@" in a]  # the aliases (demo@champion) that name this model now
        if not any(r.get(c) is not None for c in columns):
            continue  # a model with no figure (placeholder rows of the view)
        rows.append({k: (float(v) if (k in columns or k.endswith("_sd")) and v is not None and not k.endswith("_n")
                         else v) for k, v in r.items()})
    return Leaderboard(columns, tuple(rows), sort_by, note, splits, gone)
