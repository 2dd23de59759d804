"""The leaderboard and pst_progress views on an in-memory catalog, and the named queries."""

from __future__ import annotations

import re

import duckdb
import pytest

from defsentflow.storage import sql_dir
from defsentflow.storage.schema import ddl_files


def _catalog() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    for _, _, text in ddl_files():  # the numbered files and the registry's generated DDL, in order
        con.execute(text)
    con.execute((sql_dir() / "040_evaluation.sql").read_text())  # idempotent: applied on every open
    return con


def _metric(con, model, task, setting, metric, value, pooling="mean", created="2026-01-01 00:00:00"):
    con.execute("INSERT INTO metrics (model_id, task, setting, metric, value, n, pooling, created_at) "
                "VALUES (?, ?, ?, ?, ?, 10, ?, ?)", [model, task, setting, metric, value, pooling, created])


def _rows(con, sql, params=None):
    cur = con.execute(sql, params or [])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def test_leaderboard_one_row_per_model_and_pooling_with_labelled_average():
    from defsentflow.storage.leaderboard_view import refresh_leaderboard_view

    con = _catalog()
    seven = {"sts12": 70.0, "sts13": 80.0, "sts14": 75.0, "sts15": 85.0, "sts16": 79.0, "stsb-test": 82.0, "sickr": 77.0}
    for t, v in seven.items():
        _metric(con, "full", t, "all", "spearman", v)
        _metric(con, "full", t, "mean", "spearman", v - 5)  # the 'mean' setting is not a leaderboard column
    _metric(con, "full", "stsb-dev", "all", "spearman", 86.0)
    _metric(con, "full", "sts12/MSRpar", "all", "spearman", 1.0)  # per-subset rows stay out
    _metric(con, "full", "revdict", "head", "mrr", 0.31)
    _metric(con, "full", "revdict", "cosine", "mrr", 0.22)
    _metric(con, "full", "revdict", "head", "top1", 0.2)
    _metric(con, "partial", "sts12", "all", "spearman", 60.0)
    _metric(con, "partial", "sts13", "all", "spearman", 70.0)
    _metric(con, "partial", "stsb-dev", "all", "spearman", 99.0)  # dev is not in the average
    _metric(con, "partial", "sts12", "all", "spearman", 40.0, pooling="sbert_wk")
    _metric(con, "stale", "sts12", "all", "spearman", 10.0, created="2026-01-01 00:00:00")
    _metric(con, "stale", "sts12", "all", "spearman", 20.0, created="2026-02-01 00:00:00")  # newest wins
    con.execute("INSERT INTO models (model_id, path, method, run_id) VALUES ('full', '/m/full', 'pst', 'r1')")
    con.execute("INSERT INTO models (model_id, path, method) VALUES ('full-alias', '/m/full', 'defsent_plus')")
    refresh_leaderboard_view(con)  # what Catalog.record_metrics does
    table = _rows(con, "SELECT * FROM leaderboard")
    rows = {(r["model_id"], r["pooling"]): r for r in table}
    assert set(rows) == {("full", "mean"), ("partial", "mean"), ("partial", "sbert_wk"), ("stale", "mean")}
    full = rows[("full", "mean")]
    assert [full[f"{t.split('-')[0]}_test_spearman"] for t in seven] == list(seven.values())
    assert full["sts7_test_spearman"] == pytest.approx(sum(seven.values()) / 7, abs=0.005) and full["sts7_test_n"] == 7
    assert full["stsb_dev_spearman"] == 86.0 and full["revdict_test_unseen_head_mrr"] == 0.31
    assert full["revdict_test_unseen_cosine_mrr"] == 0.22
    assert full["method"] == "pst" and full["run_id"] == "r1" and full["also_known_as"] == "full-alias"
    part = rows[("partial", "mean")]
    # two of the seven: the seven-task average stays empty, its count says why (never STS12-13 under its name)
    assert part["sts7_test_spearman"] is None and part["sts7_test_n"] == 2
    assert part["sts14_test_spearman"] is None
    assert rows[("partial", "sbert_wk")]["sts12_test_spearman"] == 40.0 and rows[("partial", "sbert_wk")]["sts7_test_n"] == 1
    assert rows[("stale", "mean")]["sts12_test_spearman"] == 20.0
    # only the figures run (no 'mean' setting, no subsets, no top1), none all NULL; dev first; sorted by STS-B dev
    cols = list(table[0])
    assert cols[:6] == ["model_id", "pooling", "method", "run_id", "also_known_as", "stsb_dev_spearman"]
    assert not any("top1" in c or "mean" in c for c in cols)
    assert all(any(r[c] is not None for r in table) for c in cols[5:])
    assert [r["model_id"] for r in table][:2] == ["partial", "full"]
    # the named query is the view
    assert _rows(con, (sql_dir() / "queries" / "leaderboard.sql").read_text()) == table


def test_the_catalog_names_figures_as_the_task_table_does():
    from defsentflow.eval_tasks import EVAL_TASKS, metric_column, split_group

    con = _catalog()
    tasks = [*EVAL_TASKS, "revdict-dev", "revdict-papers", "revdict-dev-papers", "wordpred-dev", "sts7",
             "revdict-dev+q500+splitcands", "wordpred-alldefs+tiesmid+len64", "sts12+bf16", "sts7+len64",
             "revdict-multidef+len64", "unknown-dev+x"]
    for task in tasks:
        for setting, metric in (("all", "spearman"), ("hybrid", "mrr"), ("head", "top10")):
            got = con.execute("SELECT metric_column(?, ?, ?), split_group(?)", [task, setting, metric, task]).fetchone()
            assert got == (metric_column(task, setting, metric), split_group(task)), task


def test_leaderboard_without_any_sts_row_has_no_average():
    from defsentflow.storage.leaderboard_view import refresh_leaderboard_view

    con = _catalog()
    _metric(con, "m", "revdict", "head", "mrr", 0.5)
    refresh_leaderboard_view(con)
    (row,) = _rows(con, "SELECT * FROM leaderboard")
    assert "sts7_test_spearman" not in row and row["revdict_test_unseen_head_mrr"] == 0.5


def test_word_prediction_leads_with_mrr_at_10_and_keeps_full_rank_mrr_second():
    from defsentflow.storage.leaderboard_view import refresh_leaderboard_view

    con = _catalog()
    for metric, v in (("mrr", 0.0006), ("mrr@10", 0.0), ("top10", 0.0), ("n_tied", 12.0), ("chance_mrr", 0.0004)):
        _metric(con, "m", "wordpred-alldefs", "mlm_head", metric, v)
    refresh_leaderboard_view(con)
    (row,) = _rows(con, "SELECT * FROM leaderboard")
    figures = [c for c in row if c.startswith("wordpred")]
    # DefSent's Table 2 figure first, the full-rank one after it; counts and chance stay off the board
    assert figures == ["wordpred_test_alldefs_mlm_head_mrr_10", "wordpred_test_alldefs_mlm_head_mrr"]


def test_pst_progress_joins_steps_with_entry_space_stats_and_dev_scores():
    con = _catalog()
    ins = ("INSERT INTO pst_steps (run_id, step, seed, model_id, selection_metric, selection_score, chosen, "
           "entry_matrix_path, pooling) VALUES (?, ?, ?, ?, 'stsb-dev', ?, ?, ?, 'cls')")
    con.execute(ins, ["r", 0, None, "base", 70.0, True, None])
    con.execute(ins, ["r", 1, 0, "s1a", 75.0, False, "/m/1/matrix.npy"])
    con.execute(ins, ["r", 1, 1, "s1b", 78.0, True, "/m/1/matrix.npy"])
    con.execute(ins, ["r", 2, 0, "s2a", 80.0, True, "/m/2/matrix.npy"])
    con.execute(ins, ["other", 1, 0, "x", 1.0, True, "/m/1/matrix.npy"])
    es = ("INSERT INTO entry_space_stats (run_id, step, matrix_key, seed, matrix_path, n_entries, dim, avg_cosine, "
          "isoscore, created_at) VALUES (?, ?, ?, ?, ?, 100, 8, ?, ?, ?)")
    con.execute(es, ["r", 1, "old", None, "/m/1/matrix.npy", 0.9, 0.1, "2026-01-01"])
    con.execute(es, ["r", 1, "new", None, "/m/1/matrix.npy", 0.8, 0.2, "2026-01-02"])  # newest of the same path
    con.execute(es, ["r", 2, "k2", 0, None, 0.5, 0.4, "2026-01-03"])  # matched by seed
    _metric(con, "s1b", "stsb-dev", "all", "spearman", 78.0, pooling="cls")
    rows = _rows(con, "SELECT * FROM pst_progress WHERE run_id = 'r'")
    assert [(r["step"], r["model_id"]) for r in rows] == [(0, "base"), (1, "s1b"), (1, "s1a"), (2, "s2a")]
    by = {r["model_id"]: r for r in rows}
    assert by["base"]["isoscore"] is None
    assert by["s1a"]["matrix_key"] == by["s1b"]["matrix_key"] == "new" and by["s1b"]["isoscore"] == 0.2
    assert by["s2a"]["matrix_key"] == "k2" and by["s2a"]["avg_cosine"] == 0.5
    assert by["s1b"]["stsb_dev"] == 78.0 and by["s1a"]["stsb_dev"] is None
    q = _rows(con, (sql_dir() / "queries" / "pst_progress.sql").read_text(), {"run_id": "r"})
    assert [r["model_id"] for r in q] == ["base", "s1b", "s1a", "s2a"]


@pytest.mark.parametrize("name", sorted(p.name for p in (sql_dir() / "queries").glob("*.sql")))
def test_named_queries_run_on_a_fresh_catalog(name):
    con = _catalog()
    sql = (sql_dir() / "queries" / name).read_text()
    params = {k: "x" for k in re.findall(r"\$([a-z_]+)", sql)}
    con.execute(sql, params or None).fetchall()


def test_views_work_through_the_catalog_class(home):
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.record_metrics("m", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 71.5, "n": 3,
                              "pooling": "mean"}])
    assert cat.query("SELECT model_id, sts12_test_spearman AS s, sts7_test_n AS n FROM leaderboard") == [
        {"model_id": "m", "s": 71.5, "n": 1}]
    # a second process's view of the file (read-only), as `duckdb storage/catalog.duckdb` would see it
    con = duckdb.connect(str(cat.path), read_only=True)
    try:
        assert con.execute("SELECT sts12_test_spearman FROM leaderboard").fetchall() == [(71.5,)]
    finally:
        con.close()
