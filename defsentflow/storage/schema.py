"""The catalog's schema (numbered DDL files, applied by writers only) and the SQL door's parser."""

from __future__ import annotations

from typing import Any

import duckdb

from defsentflow.storage.hashing import hash_text
from defsentflow.storage.paths import sql_dir

__all__ = ["SANDBOX", "migrate", "parse_one_read_statement", "pending_ddl", "first_line"]


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


def _ddl_files() -> list[tuple[str, str, str]]:
    """``(file name, content hash, text)`` of each numbered DDL file, in order."""
    files = sorted(sql_dir().glob("[0-9][0-9][0-9]_*.sql"))
    return [(f.name, hash_text(t), t) for f in files for t in [f.read_text()]]


def pending_ddl(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """DDL files not applied to this catalog in their current form (all of them when it has
    no ``schema_version`` table: a new catalog, or one whose creation was interrupted)."""
    try:
        applied = dict(con.execute("SELECT file, sha FROM schema_version").fetchall())
    except duckdb.CatalogException:
        applied = {}
    return [f for f in _ddl_files() if applied.get(f[0]) != f[1]]


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
    return done
