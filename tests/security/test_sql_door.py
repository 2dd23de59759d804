"""``defsentflow sql``: one read-only statement, enforced by DuckDB (parser + sandboxed connection)."""

from __future__ import annotations

import pytest

from defsentflow.cli import main
from defsentflow.storage import Catalog


@pytest.fixture()
def catalog(home):
    cat = Catalog()
    cat.start_run("x", run_id="r1")
    return cat


def _sql(capsys, query: str) -> tuple[int, str, str]:
    rc = main(["sql", query])
    out, err = capsys.readouterr()
    return rc, out, err


# Each probe: a statement a careless or hostile user could send, and what must be in the error.
HOSTILE = [
    ("", "no SQL statement"),
    ("   ", "no SQL statement"),
    ("-- only a comment", "no SQL statement"),
    (";;", "no SQL statement"),
    ("SELECT 1; SELECT 2", "one statement at a time"),
    ("SELECT 1; COPY (SELECT 42 AS v) TO '{tmp}/y.csv'", "one statement at a time"),
    ("/* harmless */ COPY (SELECT 42 AS v) TO '{tmp}/y.csv'", "COPY statements are refused"),
    ("COPY runs TO '{home}/catalog.duckdb'", "COPY statements are refused"),
    ("SELECT * FROM read_csv('/etc/passwd')", "disabled by configuration"),
    ("SELECT * FROM read_text('/etc/hostname')", "disabled by configuration"),
    ("SELECT * FROM read_parquet('{tmp}/*.parquet')", "disabled by configuration"),
    ("SELECT * FROM glob('/etc/*')", "disabled by configuration"),
    ("SELECT * FROM '/etc/passwd'", "does not exist"),
    ("ATTACH '{tmp}/other.duckdb' AS o (READ_ONLY false)", "ATTACH statements are refused"),
    ("DETACH o", "DETACH statements are refused"),
    ("INSTALL httpfs", "refused"),
    ("LOAD httpfs", "refused"),
    ("SET enable_external_access = true", "SET statements are refused"),
    ("RESET lock_configuration", "SET statements are refused"),
    ("PRAGMA enable_profiling", "PRAGMA statements are refused"),
    ("CALL pragma_version()", "CALL statements are refused"),
    ("CHECKPOINT", "refused"),
    ("INSERT INTO runs (run_id, flow) VALUES ('evil', 'x')", "INSERT statements are refused"),
    ("UPDATE runs SET status = 'failed'", "UPDATE statements are refused"),
    ("DELETE FROM runs", "DELETE statements are refused"),
    ("DROP TABLE runs", "DROP statements are refused"),
    ("CREATE TABLE evil AS SELECT 1", "CREATE statements are refused"),
    ("EXPORT DATABASE '{tmp}/dump'", "EXPORT statements are refused"),
    ("BEGIN TRANSACTION", "TRANSACTION statements are refused"),
    ("SELEC 1", "Parser Error"),
    ("WITH x AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM x", "disabled by configuration"),
    ("EXPLAIN ANALYZE SELECT * FROM read_csv('/etc/passwd')", "disabled by configuration"),
    ("SELECT * FROM duckdb_secrets()", "disabled by configuration"),
]


@pytest.mark.parametrize("query,message", HOSTILE)
def test_hostile_statement_is_refused_and_writes_nothing(catalog, tmp_path, capsys, query, message):
    before = sorted(p.name for p in tmp_path.iterdir())
    mtime = catalog.path.stat().st_mtime_ns
    rc, out, err = _sql(capsys, query.format(tmp=tmp_path, home=catalog.root))
    assert rc == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no file written next to it
    assert catalog.path.stat().st_mtime_ns == mtime  # the catalog itself untouched
    assert [r["run_id"] for r in catalog.query("SELECT run_id FROM runs")] == ["r1"]


@pytest.mark.parametrize("query", ["SELECT run_id FROM runs", "EXPLAIN SELECT 1", "DESCRIBE runs", "SHOW TABLES",
                                   "SELECT * FROM leaderboard", "SUMMARIZE runs",
                                   "WITH a AS (SELECT 1 AS v) SELECT v FROM a"])
def test_reads_still_work(catalog, capsys, query):
    rc, out, err = _sql(capsys, query)
    assert rc == 0, err
    assert out.strip()


def test_missing_catalog_is_an_error_and_is_not_created(tmp_path, monkeypatch, capsys):
    home = tmp_path / "nothing-here"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(home))
    rc, out, err = _sql(capsys, "SELECT 1")
    assert rc == 2 and "no catalog at" in err
    assert not home.exists()


def test_raw_control_characters_are_escaped_in_output(catalog, capsys):
    with catalog.transaction() as con:
        con.execute("INSERT INTO quarantine (dataset, raw) VALUES ('d', ?)", ["bad\x1b[2J\x1b]0;owned\x07\r\u202eline"])
    rc, out, err = _sql(capsys, "SELECT raw FROM quarantine")
    assert rc == 0
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out and "\x07" not in out
    assert "bad\\x1b[2J" in out and "\\u202e" in out


def test_errors_are_one_line_with_escaped_control_characters(catalog, capsys):
    rc, out, err = _sql(capsys, "SELECT * FROM \"no\x1b[31mtable\"")
    assert rc == 2 and "\x1b" not in err and err.count("\n") == 1
