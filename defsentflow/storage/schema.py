"""The catalog's schema (numbered DDL files, applied by writers only) and the SQL door's parser."""

from __future__ import annotations

from typing import Any

import duckdb

from defsentflow.eval_tasks import registry_ddl
from defsentflow.storage.hashing import hash_text
from defsentflow.storage.leaderboard_view import refresh_leaderboard_view
from defsentflow.storage.paths import sql_dir

__all__ = ["GENERATED_DDL", "SANDBOX", "ddl_files", "migrate", "parse_one_read_statement", "pending_ddl", "first_line"]

# DDL rendered from Python, applied in its place among the numbered files: the evaluation tasks'
# registry and the figure-naming macros the views use (defsentflow/eval_tasks.py).
GENERATED_DDL = {"039_eval_tasks.sql": registry_ddl}


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


_first_line = first_line

# Settings of the connection that runs a user's statement: no file, network, ATTACH or extension
# access, and no later SET can change that. Catalog views read only tables, never files.
SANDBOX: dict[str, Any] = {"enable_external_access": False, "autoload_known_extensions": False,
                           "autoinstall_known_extensions": False, "lock_configuration": True}
_READ_TYPES = ("SELECT", "EXPLAIN")
_SCHEMA_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version (file VARCHAR PRIMARY KEY, sha VARCHAR NOT NULL, "
    "applied_at TIMESTAMP DEFAULT current_timestamp)"
)


def parse_one_read_statement(sql: str) -> str:
    """The one read-only statement in ``sql``, as DuckDB's own parser sees it.

    Raises:
        ValueError: nothing to run, more than one statement, a parse error, or a statement that
            is not a read (COPY, ATTACH, SET, PRAGMA, CALL, INSERT, ...).
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ValueError(_first_line(exc)) from exc
    if not statements:
        raise ValueError("no SQL statement given")
    if len(statements) > 1:
        raise ValueError(f"one statement at a time: got {len(statements)}")
    kind = statements[0].type.name
    if kind not in _READ_TYPES:
        raise ValueError(f"the sql command is read-only: {kind} statements are refused (only SELECT or EXPLAIN)")
    return statements[0].query


def ddl_files() -> list[tuple[str, str, str]]:
    """``(file name, content hash, text)`` of each numbered DDL file, in order."""
    texts = {f.name: f.read_text() for f in sql_dir().glob("[0-9][0-9][0-9]_*.sql")}
    texts.update({name: render() for name, render in GENERATED_DDL.items()})
    return [(name, hash_text(texts[name]), texts[name]) for name in sorted(texts)]


def pending_ddl(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """DDL files not applied to this catalog in their current form (all of them when it has
    no ``schema_version`` table: a new catalog, or one whose creation was interrupted)."""
    try:
        applied = dict(con.execute("SELECT file, sha FROM schema_version").fetchall())
    except duckdb.CatalogException:
        applied = {}
    return [f for f in ddl_files() if applied.get(f[0]) != f[1]]


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Bring a writable catalog's schema up to date; the names of the files applied.

    Each DDL file runs in its own transaction together with its ``schema_version`` row, so a
    kill leaves each file wholly applied or not at all, and the next open applies what is
    missing. The files are idempotent (``IF NOT EXISTS``, ``CREATE OR REPLACE VIEW``), so a
    catalog created before versioning, even half-created, is healed by applying them all.
    """
    con.execute(_SCHEMA_TABLE)
    done = []
    for name, sha, text in pending_ddl(con):
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(text)
            con.execute("INSERT OR REPLACE INTO schema_version (file, sha, applied_at) VALUES (?, ?, current_timestamp)", [name, sha])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        done.append(name)
    if done:
        refresh_leaderboard_view(con)  # the view lists the figures present (defsentflow/storage/leaderboard_view.py)
    return done
