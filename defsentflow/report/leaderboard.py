"""The leaderboard: one row per model, one column per headline score that some model has.

A model is one directory, whatever ids it was filed under (PST's ``pst-<run>`` and the
``dsp-<key>`` it selected; ``base-<hash>`` and the baseline's ``base:<name>``): the catalog view
``model_aliases`` groups them and ``model_scores`` gives their newest headline scores in long
form (``sql/045_leaderboard.sql``). This module pivots those rows, so a task or protocol added
later gets its column without any change here, and ranks models by a run's selection figure: a
dev-split score (STS-B dev, reverse-dictionary dev MRR), never a test score.

Used by ``defsentflow leaderboard``, the run report and the web app.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

__all__ = ["Leaderboard", "STS7", "format_delta", "format_number", "load_leaderboard", "selection_column"]

# The seven tasks of the STS average (SentEval's 'all' setting); STS-B dev is a selection set.
STS7 = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb_test", "sickr")
_ORDER = ("stsb_dev", *STS7, "avg_sts", "n_avg")


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
        ('stsb_dev', ['pst-demo-78a6f724', 'base:all-MiniLM-L6-v2'])
    """

    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    sort_by: str | None
    sort_note: str
    splits: dict[str, str] = field(default_factory=dict)   # column -> dev | test

    IDENTITY = ("model_id", "pooling", "method")

    def restrict(self, model_ids: Iterable[str]) -> Leaderboard:
        """Only the rows of these models (any of their ids), and only columns those rows hold."""
        wanted = set(model_ids)
        rows = tuple(r for r in self.rows if wanted & set(r["aliases"]))
        cols = tuple(c for c in self.columns if any(r.get(c) is not None for r in rows))
        return replace(self, rows=rows, columns=cols)

    def table(self, extra: Sequence[str] = ()) -> tuple[list[str], list[list[Any]]]:
        """Header and rows for printing: identity columns, ``extra``, the score columns, other ids."""
        cols = [*self.IDENTITY, *extra, *self.columns, "also_known_as"]
        out = []
        for r in self.rows:
            other = [a for a in r["aliases"] if a != r["model_id"]]
            out.append([*(r.get(c) for c in cols[:-1]), ", ".join(other)])
        return cols, out

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "splits": self.splits, "sort_by": self.sort_by,
                "sort_note": self.sort_note,
                "rows": [{k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in r.items()
                          if k not in ("path",)} for r in self.rows]}


def _column_order(cols: Iterable[str]) -> list[str]:
    cols = set(cols)
    return [c for c in _ORDER if c in cols] + sorted(cols - set(_ORDER))


def selection_column(catalog: Any, run_id: str | None = None,
                     dev_columns: Sequence[str] = ()) -> tuple[str | None, str]:
    """The dev-split column a run selected by, and a sentence saying so.

    ``run_id``: a run with a PST record (default: the newest one). PST's ``stsb-dev`` is the
    ``stsb_dev`` column; ``revdict-mrr`` is the dev MRR in the run's selection mode
    (``revdict_dev_<mode>_mrr``). Without a PST run, STS-B dev, else the first dev column.
    """
    sql = ("SELECT p.run_id, p.selection_metric, coalesce(json_extract_string(r.config, '$.pst.selection_revdict_mode'), "
           "json_extract_string(r.config, '$.selection_revdict_mode')) AS mode FROM pst_runs AS p "
           "LEFT JOIN runs AS r USING (run_id) ")
    rows = _query(catalog, sql + ("WHERE p.run_id = ?" if run_id else "ORDER BY p.created_at DESC LIMIT 1"),
                  [run_id] if run_id else None)
    dev = list(dev_columns)
    if rows and rows[0]["selection_metric"]:
        r = rows[0]
        metric = r["selection_metric"]
        norm = re.sub(r"[^A-Za-z0-9]+", "_", metric)   # stsb_dev, revdict_mrr, wordpred_dev_mrr
        wanted = [norm]
        if metric.startswith("revdict"):
            wanted.append(f"revdict_dev_{r['mode'] or 'cosine'}_mrr")
        # else a dev column of the same task family and metric (wordpred_dev_mrr -> wordpred_dev_head_mrr)
        family, last = norm.split("_")[0], norm.rsplit("_", 1)[-1]
        wanted += [c for c in dev if c.startswith(family + "_") and c.endswith("_" + last)]
        for c in wanted:
            if c in dev:
                return c, f"sorted by {c} (dev split), the figure run {r['run_id']} selected by ({metric})"
    if "stsb_dev" in dev:
        return "stsb_dev", "sorted by stsb_dev (dev split)" + ("" if rows else "; no PST run in the catalog")
    if dev:
        return dev[0], f"sorted by {dev[0]} (dev split)"
    return None, "no dev-split score recorded: sorted by model id"


def _query(catalog: Any, sql: str, params: Any = None) -> list[dict[str, Any]]:
    import duckdb

    try:
        return catalog.query(sql, params)
    except duckdb.CatalogException:  # older than sql/040_evaluation.sql or 045_leaderboard.sql, opened read-only
        return []


def load_leaderboard(catalog: Any, *, run_id: str | None = None) -> Leaderboard:
    """Every model with scores, one row per (model, pooling), best selection figure first.

    Args:
        catalog: a :class:`~defsentflow.storage.Catalog`.
        run_id: whose selection figure ranks the rows (default: the newest PST run's).
    """
    scores = _query(catalog, 'SELECT model_id, aliases, pooling, "column", split, value FROM model_scores')
    # the display id's own method, path and run; a method of another of its ids when it has none
    meta = {r["model_id"]: r for r in _query(
        catalog, "SELECT a.display_id AS model_id, "
                 "coalesce(max(a.method) FILTER (WHERE a.model_id = a.display_id), max(a.method)) AS method, "
                 "max(a.path) FILTER (WHERE a.model_id = a.display_id) AS path, "
                 "max(m.run_id) FILTER (WHERE a.model_id = a.display_id) AS run_id "
                 "FROM model_aliases AS a LEFT JOIN models AS m USING (model_id) GROUP BY a.display_id")}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    splits: dict[str, str] = {}
    for s in scores:
        key = (s["model_id"], s["pooling"] or "")
        m = meta.get(s["model_id"], {})
        row = rows.setdefault(key, {"model_id": s["model_id"], "pooling": s["pooling"], "method": m.get("method"),
                                    "run_id": m.get("run_id"), "path": m.get("path"), "aliases": list(s["aliases"])})
        row[s["column"]] = float(s["value"])
        splits[s["column"]] = s["split"]
    for row in rows.values():
        present = [row[c] for c in STS7 if row.get(c) is not None]
        if present:
            row["avg_sts"], row["n_avg"] = sum(present) / len(present), len(present)
    if any("avg_sts" in r for r in rows.values()):
        splits.update(avg_sts="test", n_avg="test")
    columns = tuple(_column_order(splits))
    sort_by, note = selection_column(catalog, run_id, [c for c in columns if splits[c] == "dev"])
    ordered = sorted(rows.values(), key=lambda r: (r.get(sort_by) is None, -(r.get(sort_by) or 0.0), r["model_id"],
                                                   r["pooling"] or ""))
    return Leaderboard(columns, tuple(ordered), sort_by, note, splits)
