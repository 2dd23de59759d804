"""The one leaderboard definition: a SELECT over ``model_scores`` (``sql/100_leaderboard.sql``)
with one column per figure some model has, which the catalog keeps as the ``leaderboard`` view
and which ``defsentflow leaderboard``, the web page and the run report run as it is.

DuckDB cannot keep a PIVOT over values found in the data as a view, so the view is rewritten
with the figures present whenever metrics are recorded (:meth:`Catalog.record_metrics`) and when
the schema changes. Rows: one per model (ids of one model directory merged, the others in
``also_known_as``) and pooling. Columns: identity, then dev figures, then test, then train, each
group in the task table's order (``defsentflow/eval_tasks.py``); figures x 100 (Spearman, and the
transfer tasks' accuracy, F1 and Pearson) rounded to 2 decimals, the rest to 4 (:func:`column_decimals`). Sorted by the dev selection figure of the newest PST run
(or of ``run_id``).

A model whose folder is gone (deleted by hand, or moved aside as changed) while its metrics rows
remain is no model any more: :func:`gone_models` names it, and every reader of the board (the CLI,
the web app, the run report: :func:`~defsentflow.report.leaderboard.load_leaderboard`) leaves its
row out, saying so. The stored view cannot see the disk (``sql`` reads with file access disabled),
so it keeps the rows.

Example:
    >>> sql, columns, splits, sort_by, note = leaderboard_select(con)
    >>> con.execute(sql).fetchall()
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import duckdb

from defsentflow.eval_tasks import EVAL_TASKS, SELECTION_METRICS, TASKS
from defsentflow.storage.paths import from_root

__all__ = ["IDENTITY_COLUMNS", "column_decimals", "gone_models", "leaderboard_select", "refresh_leaderboard_view",
           "selection_column"]

IDENTITY_COLUMNS = ("model_id", "pooling", "method", "run_id", "also_known_as")
_GROUPS = ("dev", "test", "train")
_FAMILIES = list(dict.fromkeys(t.split("-")[0] for t in EVAL_TASKS))
_PERCENT = ("_spearman", "_pearson", "_acc", "_f1")  # metrics reported x 100


def column_decimals(column: str) -> int:
    """The decimals a leaderboard figure is shown with, the same for every model: figures x 100
    (Spearman; the transfer tasks' accuracy, F1 and Pearson) 2, counts (``*_n``) 0, MRR and other
    figures in [0, 1] 4."""
    return 2 if column.removesuffix("_sd").endswith(_PERCENT) else 0 if column.endswith("_n") else 4


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    try:
        return con.execute(sql, list(params)).fetchall()
    except (duckdb.CatalogException, duckdb.BinderException):  # a catalog from before the table, view or column
        return []


def _order(columns: dict[str, str]) -> list[str]:
    """Dev figures first, then test, then train; within a group the task table's order."""
    def key(c: str) -> tuple:
        family = c.split("_")[0]
        rank = (_FAMILIES.index(family) if family in _FAMILIES else
                _FAMILIES.index("sickr") + 0.5 if family == "sts7" else len(_FAMILIES))   # the average after its tasks
        return (_GROUPS.index(columns[c]) if columns[c] in _GROUPS else 3, rank, c.endswith("_n"), _second(c), c)
    return sorted(columns, key=key)


def _second(column: str) -> bool:
    """A family's second figure (word prediction's full-rank MRR), ordered after its headline (MRR@10)."""
    meta = TASKS.get(column.split("_")[0])
    return meta is not None and any(column.endswith("_" + re.sub(r"[^A-Za-z0-9]+", "_", m)) for m in meta.also_metrics)


def selection_column(con: duckdb.DuckDBPyConnection, dev_columns: Sequence[str],
                     run_id: str | None = None) -> tuple[str | None, str]:
    """The dev column a run selected by (default: the newest PST run), and a sentence saying so.

    The column is the one PST's selection scorer named from the task registry when it computed the
    figure (``pst_runs.selection_column``: ``stsb_dev_spearman``, ``stsb_dev_bf16_spearman``,
    ``revdict_dev_unseen_q1000_len64_cosine_mrr``, ...). Without a PST run (or a run from before the
    column was kept): STS-B dev, else the first dev column.
    """
    sql = "SELECT run_id, selection_metric, selection_column FROM pst_runs "
    rows = _rows(con, sql + ("WHERE run_id = ?" if run_id else "ORDER BY created_at DESC LIMIT 1"),
                 [run_id] if run_id else [])
    dev = list(dev_columns)
    stsb = SELECTION_METRICS["stsb-dev"].column()
    if rows and rows[0][2] in dev:
        run, metric, column = rows[0]
        return column, f"sorted by {column} (dev split), the figure run {run} selected by ({metric})"
    if stsb in dev:
        return stsb, f"sorted by {stsb} (dev split)" + ("" if rows else "; no PST run in the catalog")
    if dev:
        return dev[0], f"sorted by {dev[0]} (dev split)"
    return None, "no dev-split score recorded: sorted by model id"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def leaderboard_select(con: duckdb.DuckDBPyConnection, run_id: str | None = None
                       ) -> tuple[str, tuple[str, ...], dict[str, str], str | None, str]:
    """``(sql, score columns, column -> dev|test|train, sort column, sort sentence)``.

    A figure that some row holds as a mean over seeds (seed_stats) has its sd beside it in the
    result as ``<column>_sd`` (not a score column).
    """
    # the seed statistics' rows (seed_scores) only where a PST run has them: a cheaper view otherwise
    source, figures = "model_scores", 'SELECT DISTINCT "column", split, FALSE FROM model_scores'
    if _rows(con, "SELECT 1 FROM pst_seed_models LIMIT 1"):
        source = "(SELECT * FROM model_scores UNION ALL BY NAME SELECT * FROM seed_scores)"
        figures = f'SELECT "column", any_value(split), bool_or(sd IS NOT NULL) FROM {source} GROUP BY ALL'
    found, with_sd = {}, set()
    for column, split, sd in _rows(con, figures):
        found[column] = split
        if sd:
            with_sd.add(column)
    columns = tuple(_order(found))
    sort_by, note = selection_column(con, [c for c in columns if found[c] == "dev"], run_id)
    meta = ("SELECT a.display_id AS model_id, "
            "coalesce(max(a.method) FILTER (WHERE a.model_id = a.display_id), max(a.method)) AS method, "
            "max(m.run_id) FILTER (WHERE a.model_id = a.display_id) AS run_id "
            "FROM model_ids AS a LEFT JOIN models AS m USING (model_id) GROUP BY a.display_id")
    if not columns:
        return (f"SELECT model_id, CAST(NULL AS VARCHAR) AS pooling, method, run_id, '' AS also_known_as "
                f"FROM ({meta}) ORDER BY model_id"), (), {}, None, note
    values = ", ".join("'" + c.replace("'", "''") + "'" for c in columns)
    rounded = ", ".join(f"round(p.{_quote(c)}, {column_decimals(c)})"
                        f"{'::INTEGER' if c.endswith('_n') else ''} AS {_quote(c)}" for c in columns)
    order = (f"p.{_quote(sort_by)} DESC NULLS LAST, " if sort_by else "") + "p.model_id, p.pooling NULLS FIRST"
    sds = [c for c in columns if c in with_sd]
    sd_cte, sd_join, sd_cols = "", "", ""
    if sds:
        names = ", ".join("'" + (c + "_sd").replace("'", "''") + "'" for c in sds)
        sd_cte = (f"q AS (PIVOT (SELECT model_id, pooling, \"column\" || '_sd' AS \"column\", sd FROM seed_scores) "
                  f"ON \"column\" IN ({names}) USING first(sd) GROUP BY model_id, pooling), ")
        sd_join = " LEFT JOIN q ON q.model_id = p.model_id AND q.pooling IS NOT DISTINCT FROM p.pooling"
        sd_cols = "".join(f", round(q.{_quote(c + '_sd')}, {column_decimals(c)}) AS {_quote(c + '_sd')}"
                          for c in sds)
    sql = (f"WITH s AS (SELECT model_id, aliases, pooling, \"column\", value FROM {source}), "
           f"p AS (PIVOT s ON \"column\" IN ({values}) USING first(value) GROUP BY model_id, aliases, pooling), "
           f"{sd_cte}meta AS ({meta}) "
           f"SELECT p.model_id, p.pooling, meta.method, meta.run_id, "
           f"array_to_string(list_filter(p.aliases, lambda a: a <> p.model_id), ', ') AS also_known_as, {rounded}{sd_cols} "
           f"FROM p LEFT JOIN meta USING (model_id){sd_join} ORDER BY {order}")
    return sql, columns, {c: found[c] for c in columns}, sort_by, note


def refresh_leaderboard_view(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the ``leaderboard`` view with the figures present now (inside the caller's transaction)."""
    if not _rows(con, "SELECT 1 FROM duckdb_views() WHERE view_name = 'model_scores' LIMIT 1"):
        return  # schema not there yet
    sql = leaderboard_select(con)[0]
    con.execute(f"CREATE OR REPLACE VIEW leaderboard AS {sql}")



def gone_models(con: duckdb.DuckDBPyConnection, root: str | os.PathLike) -> dict[str, str]:
    """Leaderboard rows (``model_id`` as the board shows it) whose model folder is gone, with the folder.

    A model is its folder (``models.path``; every id of a row shares it): gone when that path names a
    folder of the data root ``root`` (stored relative to it) that no longer exists. A folder outside the
    root (an external base model: not the project's to remove), a hub name, or a model known only by its
    metrics (no ``models`` row) is never gone here.
    """
    gone = {}
    for display_id, stored in _rows(con, "SELECT a.display_id, any_value(a.path) FROM model_aliases AS a "
                                         "WHERE a.path IS NOT NULL GROUP BY a.display_id"):
        path = from_root(root, stored)
        if not os.path.isabs(stored) and os.path.isabs(path) and not os.path.exists(path):
            gone[display_id] = stored
    return gone
