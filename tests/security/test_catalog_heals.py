"""Catalog schema: each DDL file in one transaction, a schema_version table, and healing."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from defsentflow.storage import Catalog, sql_dir
from defsentflow.storage.catalog import migrate, pending_ddl


def _tables(path) -> set[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    finally:
        con.close()


def test_half_created_catalog_heals_on_next_command(home):
    # A kill during the first creation under the old code: only the first DDL file got applied,
    # and there is no schema_version table.
    path = home / "catalog.duckdb"
    con = duckdb.connect(str(path))
    con.execute((sql_dir() / "001_core.sql").read_text())
    con.close()
    assert "definitions" not in _tables(path)
    cat = Catalog()
    # The first command that touches it only reads: it still finds every table.
    assert cat.query("SELECT count(*) AS n FROM definitions") == [{"n": 0}]
    assert cat.query("SELECT count(*) AS n FROM sweep_results") == [{"n": 0}]
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert pending_ddl(con) == []
    finally:
        con.close()


def test_ingest_into_a_half_created_catalog_works(home, tmp_path, capsys):
    from defsentflow.cli import main

    con = duckdb.connect(str(home / "catalog.duckdb"))
    con.execute((sql_dir() / "001_core.sql").read_text())  # killed after the first DDL file
    con.close()
    Catalog._ddl_applied.clear()
    src = tmp_path / "d.tsv"
    src.write_text("".join(f"word{i}\tthing number {i}\n" for i in range(30)))
    assert main(["--quiet", "ingest", "dictionary", "--name", "d", "--source", "tsv", str(src)]) == 0
    assert "dataset d: built" in capsys.readouterr().out


def test_a_failing_ddl_file_is_rolled_back_and_retried(home, tmp_path, monkeypatch):
    ddl = tmp_path / "sql"
    shutil.copytree(sql_dir(), ddl)
    (ddl / "900_broken.sql").write_text("CREATE TABLE half_made (a INTEGER);\nCREATE TABLE oops (a NO_SUCH_TYPE);\n")
    monkeypatch.setenv("DEFSENTFLOW_SQL_DIR", str(ddl))
    Catalog._ddl_applied.clear()
    with pytest.raises(duckdb.Error):
        Catalog().start_run("x", run_id="r1")
    tables = _tables(home / "catalog.duckdb")
    assert "runs" in tables and "half_made" not in tables  # earlier files committed, the broken one not at all
    (ddl / "900_broken.sql").write_text("CREATE TABLE IF NOT EXISTS half_made (a INTEGER);\n")
    Catalog._ddl_applied.clear()
    Catalog().start_run("x", run_id="r1")  # the next command applies what is missing
    assert "half_made" in _tables(home / "catalog.duckdb")


def test_a_changed_ddl_file_is_applied_again(home, tmp_path, monkeypatch):
    ddl = tmp_path / "sql"
    shutil.copytree(sql_dir(), ddl)
    monkeypatch.setenv("DEFSENTFLOW_SQL_DIR", str(ddl))
    cat = Catalog()
    cat.start_run("x", run_id="r1")
    (ddl / "900_extra.sql").write_text("CREATE OR REPLACE VIEW run_ids AS SELECT run_id FROM runs;\n")
    Catalog._ddl_applied.clear()  # a new process
    assert cat.query("SELECT * FROM run_ids") == [{"run_id": "r1"}]
    con = duckdb.connect(str(cat.path))
    try:
        assert migrate(con) == []  # nothing behind any more
        assert con.execute("SELECT count(*) FROM schema_version WHERE file = '900_extra.sql'").fetchone() == (1,)
    finally:
        con.close()
