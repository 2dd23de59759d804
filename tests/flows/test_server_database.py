"""A fresh Prefect home's database from the migrated template (tasks/server.py): the file mechanics
on plain SQLite databases. The servers themselves: tests/integration/test_cluster_netns.py (a command
on a fresh home starts from the template: it holds the template's block types, not new ones)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from defsentflow.tasks import server as runtime


def _db(path: Path, rows: int = 0) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE alembic_version (version_num TEXT)")
    con.execute("INSERT INTO alembic_version VALUES ('head')")
    con.execute("CREATE TABLE flow_run (id INTEGER)")
    con.executemany("INSERT INTO flow_run VALUES (?)", [(i,) for i in range(rows)])
    con.commit()
    con.close()
    return path


def _runs(path: Path) -> int:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT count(*) FROM flow_run").fetchone()[0]
    finally:
        con.close()


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("DEFSENTFLOW_CACHE_DIR", str(tmp_path / "cache"))
    for key in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(key, raising=False)
    return tmp_path / "cache"


def test_a_migrated_database_becomes_the_template_and_fresh_homes_start_from_it(cache, tmp_path):
    first = _db(tmp_path / "first.db")
    runtime._keep_template(first)
    template = runtime.database_template()
    assert template.parent == cache and template.name.startswith("prefect-") and _runs(template) == 0
    fresh = tmp_path / "home" / "prefect.db"
    fresh.parent.mkdir()
    assert runtime._seed_database(fresh) and _runs(fresh) == 0
    assert sorted(p.name for p in fresh.parent.iterdir()) == ["prefect.db"]  # no temporary file left


def test_the_template_is_never_replaced_and_a_database_never_overwritten(cache, tmp_path):
    runtime._keep_template(_db(tmp_path / "first.db"))
    runtime._keep_template(_db(tmp_path / "second.db", rows=3))  # another command's, later: not taken
    assert _runs(runtime.database_template()) == 0
    there = _db(tmp_path / "there.db", rows=2)
    assert not runtime._seed_database(there) and _runs(there) == 2


def test_nothing_is_kept_from_what_is_not_a_migrated_database(cache, tmp_path):
    runtime._keep_template(tmp_path / "missing.db")  # a server that made no database (a stand-in)
    assert not (tmp_path / "missing.db").exists() and not runtime.database_template().exists()
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).close()
    runtime._keep_template(plain)  # no alembic_version: not Prefect's, not migrated
    assert not runtime.database_template().exists()
    assert not runtime._seed_database(tmp_path / "fresh.db")  # no template: the server migrates as before


def test_a_database_of_the_users_own_is_left_alone(cache, tmp_path, monkeypatch):
    assert runtime._server_database(tmp_path) == tmp_path / "prefect.db"
    monkeypatch.setenv("PREFECT_SERVER_DATABASE_CONNECTION_URL", "postgresql+asyncpg://u:p@db/prefect")
    assert runtime._server_database(tmp_path) is None
