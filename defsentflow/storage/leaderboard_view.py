"""The one leaderboard definition: a SELECT over ``model_scores`` (``sql/100_leaderboard.sql``)
with one column per figure some model has, which the catalog keeps as the ``leaderboard`` view
and which ``defsentflow leaderboard``, the web page and the run report run as it is.

DuckDB cannot keep a PIVOT over values found in the data as a view, so the view is rewritten
with the figures present whenever metrics are recorded (:meth:`Catalog.record_metrics`) and when
the schema changes. Rows: one per model (ids of one model directory merged, the others in
``also_known_as``) and pooling. Columns: identity, then dev figures, then test, then train, each
group in the task table's order (``defsentflow/eval_tasks.py``); Spearman rounded to 2 decimals,
the rest to 4. Sorted by the dev selection figure of the newest PST run (or of ``run_id``).

Example:
    >>> sql, columns, splits, sort_by, note = leaderboard_select(con)
    >>> con.execute(sql).fetchall()
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import duckdb

from defsentflow.eval_tasks import EVAL_TASKS, TASKS, FigureSettings, dictionary_task, metric_column

__all__ = ["IDENTITY_COLUMNS", "leaderboard_select", "refresh_leaderboard_view", "selection_column"]

IDENTITY_COLUMNS = ("model_id", "pooling", "method", "run_id", "also_known_as")
_GROUPS = ("dev", "test", "train")
_FAMILIES = list(dict.fromkeys(t.split("-")[0] for t in EVAL_TASKS))


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    try:
        return con.execute(sql, list(params)).fetchall()
    except duckdb.CatalogException:  # a catalog from before the table or view existed (read-only)
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

    PST's ``stsb-dev`` is ``stsb_dev_spearman``; ``revdict-mrr`` the dev MRR in the run's
    selection mode, named with the settings PST scored it with (``revdict_dev_unseen_q1000_len64_cosine_mrr``);
    another metric a dev column of its family. Without a PST run: STS-B dev, else the first dev column.
    """
    sql = ("SELECT p.run_id, p.selection_metric, coalesce(json_extract(r.config, '$.pst'), r.config)::VARCHAR "
           "FROM pst_runs AS p LEFT JOIN runs AS r USING (run_id) ")
    rows = _rows(con, sql + ("WHERE p.run_id = ?" if run_id else "ORDER BY p.created_at DESC LIMIT 1"),
                 [run_id] if run_id else [])
    dev = list(dev_columns)
    stsb = metric_column("stsb-dev", "all", "spearman")
    if rows and rows[0][1]:
        run, metric, config = rows[0]
        if metric.startswith("revdict"):
            pst = json.loads(config) if config else {}
            settings = FigureSettings(max_length=pst.get("max_length", 64), autocast=pst.get("autocast", "none"),
                                      max_queries=pst.get("selection_max_queries", 2000))
            mode = pst.get("selection_revdict_mode") or "cosine"
            exact = metric_column(dictionary_task("revdict", "dev", "unseen", settings), mode, "mrr")
            # the exact figure, else the same figure under other settings (a catalog from before the names)
            wanted = [exact, *(c for c in dev if c.startswith("revdict_dev_unseen_") and c.endswith(f"_{mode}_mrr"))]
        elif metric == "stsb-dev":
            wanted = [stsb]
        else:  # wordpred-dev-mrr: a dev column of the same family and metric
            family, last = metric.split("-")[0], re.split(r"[^A-Za-z0-9]+", metric)[-1]
            wanted = [c for c in dev if c.startswith(family + "_dev_") and c.endswith("_" + last)]
        for c in wanted:
            if c in dev:
                return c, f"sorted by {c} (dev split), the figure run {run} selected by ({metric})"
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
            "FROM model_aliases AS a LEFT JOIN models AS m USING (model_id) GROUP BY a.display_id")
    if not columns:
        return (f"SELECT model_id, CAST(NULL AS VARCHAR) AS pooling, method, run_id, '' AS also_known_as "
                f"FROM ({meta}) ORDER BY model_id"), (), {}, None, note
    values = ", ".join("'" + c.replace("'", "''") + "'" for c in columns)
    rounded = ", ".join(f"round(p.{_quote(c)}, {2 if c.endswith('_spearman') else 0 if c.endswith('_n') else 4})"
                        f"{'::INTEGER' if c.endswith('_n') else ''} AS {_quote(c)}" for c in columns)
    order = (f"p.{_quote(sort_by)} DESC NULLS LAST, " if sort_by else "") + "p.model_id, p.pooling NULLS FIRST"
    sds = [c for c in columns if c in with_sd]
    sd_cte, sd_join, sd_cols = "", "", ""
    if sds:
        names = ", ".join("'" + (c + "_sd").replace("'", "''") + "'" for c in sds)
        sd_cte = (f"q AS (PIVOT (SELECT model_id, pooling, \"column\" || '_sd' AS \"column\", sd FROM seed_scores) "
                  f"ON \"column\" IN ({names}) USING first(sd) GROUP BY model_id, pooling), ")
        sd_join = " LEFT JOIN q ON q.model_id = p.model_id AND q.pooling IS NOT DISTINCT FROM p.pooling"
        sd_cols = "".join(f", round(q.{_quote(c + '_sd')}, {2 if c.endswith('_spearman') else 4}) AS {_quote(c + '_sd')}"
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

