"""The DuckDB catalog: runs, stages, artifacts, models, metrics and the dictionary tables.

DuckDB lets one process hold a database file for writing, and then every other process fails
to open it, even read-only. So the catalog is never held open across long work: every call
opens a short-lived connection, does its statements in one transaction and closes it, retrying
with backoff while another process holds the lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import duckdb

from defsentflow.storage.hashing import code_version, hash_path, hash_text
from defsentflow.storage.identifiers import check_identifier
from defsentflow.storage.manifest import artifact_manifest, full_check, manifest_hash, quick_check
from defsentflow.storage.leaderboard_view import refresh_leaderboard_view
from defsentflow.storage.paths import data_root, sql_dir

__all__ = ["Catalog", "CatalogLockedError", "SANDBOX", "migrate", "parse_one_read_statement", "pending_ddl"]

log = logging.getLogger(__name__)

STORAGE_COMPATIBILITY = "v1.4.0"
_LOCK_MARKERS = ("Could not set lock", "Conflicting lock", "database is locked", "lock on file")


class CatalogLockedError(RuntimeError):
    """The catalog stayed locked by another process for longer than the timeout."""


# Settings of the connection that runs a user's statement: no file, network, ATTACH or extension
# access, and no later SET can change that. Catalog views read only tables, never files.
SANDBOX: dict[str, Any] = {"enable_external_access": False, "autoload_known_extensions": False,
                           "autoinstall_known_extensions": False, "lock_configuration": True}
_READ_TYPES = ("SELECT", "EXPLAIN")
_SCHEMA_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version (file VARCHAR PRIMARY KEY, sha VARCHAR NOT NULL, "
    "applied_at TIMESTAMP DEFAULT current_timestamp)"
)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


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
    if done:
        refresh_leaderboard_view(con)  # the view lists the figures present (defsentflow/storage/leaderboard_view.py)
    return done


def _move_aside(path: Path) -> Path | None:
    """Rename a changed artifact to ``.changed-<time>-<name>`` beside it; None if it is gone already."""
    aside = path.with_name(f".changed-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}-{path.name}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:  # another process moved it first
        return None
    return aside


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, default=str)


class Catalog:
    """Short-lived access to ``<data root>/catalog.duckdb``.

    Example:
        >>> cat = Catalog("storage")
        >>> cat.query("SELECT count(*) FROM runs")
    """

    _ddl_applied: set[str] = set()

    def __init__(self, root: str | os.PathLike | None = None, *, lock_timeout: float = 120.0, create: bool = True):
        self.root = data_root(root, create=create)
        self.path = self.root / "catalog.duckdb"
        self.lock_timeout = lock_timeout

    # -- connections ---------------------------------------------------------------------
    def _open(self, read_only: bool, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        """``duckdb.connect``, retrying with jittered backoff while the file is locked."""
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.05
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only, config=config)
            except duckdb.Error as exc:  # IOException when another process holds the lock
                locked = any(m in str(exc) for m in _LOCK_MARKERS)
                if not locked:
                    raise
                if time.monotonic() > deadline:
                    raise CatalogLockedError(f"{self.path}: locked by another process for {self.lock_timeout:.0f}s") from exc
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 2.0)

    def _schema_key(self) -> str:
        # The inode too: a catalog deleted and created again at the same path is a new catalog.
        return f"{self.path}:{self.path.stat().st_ino}"

    @contextlib.contextmanager
    def connect(self, read_only: bool = False, *, config: Mapping[str, Any] | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open a connection whose schema is up to date (see :func:`migrate`).

        A read-only open of a catalog whose schema is behind first brings it up to date with a
        short writable open; a read-only open of a missing catalog creates it.
        """
        if read_only and not self.path.exists():
            read_only = False  # nothing to read yet: create the schema first
        cfg = dict(config or {})
        # A new file is written in a storage format that the DuckDB 1.4+ CLI (PyPI: duckdb-cli)
        # also reads, so `duckdb storage/catalog.duckdb -c "..."` works from a shell.
        if not self.path.exists():
            cfg["storage_compatibility_version"] = STORAGE_COMPATIBILITY
        con = self._open(read_only, cfg)
        try:
            key = self._schema_key()
            if key not in Catalog._ddl_applied:
                if not read_only:
                    migrate(con)
                elif pending_ddl(con):
                    con.close()
                    with self.connect():  # a writable open migrates
                        pass
                    con = self._open(read_only, cfg)
                Catalog._ddl_applied.add(key)
            yield con
        finally:
            con.close()

    def user_query(self, sql: str) -> tuple[list[str], list[tuple]]:
        """Run one read-only statement given by a user (``defsentflow sql``).

        DuckDB itself enforces it: its parser must find exactly one SELECT (or EXPLAIN, DESCRIBE,
        SHOW, SUMMARIZE, which it parses as SELECT) statement; the connection is read-only, with
        external access (files, ATTACH, COPY, extensions) disabled and the configuration locked,
        so the statement can neither write nor read a file. A missing catalog is an error, never
        created.

        Raises:
            ValueError: empty, several, unparsable or non-read statements; no catalog.
        """
        statements = parse_one_read_statement(sql)
        if not self.path.is_file():
            raise ValueError(f"no catalog at {self.path} (an ingest creates it)")
        with self.connect(read_only=True):  # bring an older schema up to date (our DDL only)
            pass
        with self.connect(read_only=True, config=SANDBOX) as con:
            try:
                cur = con.execute(statements)
            except duckdb.Error as exc:
                raise ValueError(_first_line(exc)) from exc
            cols = [d[0] for d in cur.description] if cur.description else []
            return cols, cur.fetchall()

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> None:
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            con.execute(sql, params or [])
            con.execute("COMMIT")

    def transaction(self):
        """Context manager yielding a connection inside one transaction (all or nothing)."""

        @contextlib.contextmanager
        def _tx() -> Iterator[duckdb.DuckDBPyConnection]:
            with self.connect() as con:
                con.execute("BEGIN TRANSACTION")
                try:
                    yield con
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")

        return _tx()

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query and return rows as dicts."""
        with self.connect(read_only=True) as con:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description] if cur.description else []
            return [dict(zip(cols, row)) for row in cur.fetchall()]

    def query_table(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> tuple[list[str], list[tuple]]:
        with self.connect(read_only=True) as con:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description] if cur.description else []
            return cols, cur.fetchall()

    # -- runs and stages -------------------------------------------------------------------
    def start_run(self, flow: str, config: Any = None, config_hash: str | None = None, run_id: str | None = None) -> str:
        run_id = check_identifier(run_id or uuid.uuid4().hex[:12], "run id")
        self.execute(
            "INSERT INTO runs (run_id, flow, config, config_hash, code_version, status) VALUES (?, ?, ?, ?, ?, 'running') "
            "ON CONFLICT (run_id) DO UPDATE SET status = 'running', ended_at = NULL",
            [run_id, flow, _json(config), config_hash, code_version()],
        )
        return run_id

    def end_run(self, run_id: str, status: str = "completed", note: str | None = None, *, flow: str | None = None) -> None:
        """Close a run. A pipeline run is closed only by the pipeline (``flow="pipeline"``): stage
        flows that share its run id (so lineage stays one run) cannot end it early."""
        self.execute(
            "UPDATE runs SET status = ?, ended_at = current_timestamp, note = coalesce(?, note) "
            "WHERE run_id = ? AND (flow = ? OR (? IS NULL AND flow <> 'pipeline'))",
            [status, note, run_id, flow, flow],
        )

    def record_stage(self, run_id: str, stage: str, status: str, cache_key: str | None = None,
                     seconds: float | None = None, note: str | None = None) -> None:
        self.execute(
            "INSERT INTO stages (run_id, stage, cache_key, status, ended_at, seconds, note) "
            "VALUES (?, ?, ?, ?, current_timestamp, ?, ?)",
            [run_id, stage, cache_key, status, seconds, note],
        )

    # -- artifacts -------------------------------------------------------------------------
    def register_artifact(self, key: str, kind: str, path: str | os.PathLike, content_hash: str, *,
                          name: str | None = None, input_hashes: Mapping[str, str] | None = None,
                          config: Any = None, run_id: str | None = None, meta: Any = None,
                          con: duckdb.DuckDBPyConnection | None = None) -> None:
        """Record a complete artifact. Call only after its files are in place.

        Its manifest (each file's size, quick hash and full hash) is stored too, so that
        :meth:`artifact` can tell a changed or damaged artifact from the one registered.
        """
        manifest = artifact_manifest(path)
        sql = (
            "INSERT OR REPLACE INTO artifacts (artifact_key, kind, name, path, content_hash, input_hashes, config, "
            "code_version, run_id, meta, size_bytes, manifest, manifest_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        params = [key, kind, name, str(path), content_hash, _json(input_hashes), _json(config), code_version(), run_id,
                  _json(meta), sum(f["size"] for f in manifest.values()), _json(manifest), manifest_hash(manifest)]
        if con is not None:
            con.execute(sql, params)
        else:
            self.execute(sql, params)

    def artifact(self, key: str) -> dict[str, Any] | None:
        """The artifact registered under ``key`` if its files are still the ones registered, else None.

        The files are checked against the manifest (names, sizes, quick hashes): a changed or
        damaged artifact is reported (a warning) and treated as absent, so its stage recomputes.
        """
        rows = self.query("SELECT * FROM artifacts WHERE artifact_key = ?", [key])
        if not rows or not Path(rows[0]["path"]).exists():
            return None
        row = rows[0]
        if row.get("manifest"):
            problem = quick_check(row["path"], row["manifest"])
            if problem:
                # Moved aside (hidden, kept for inspection) so that no stage falls back to the
                # changed files on disk: whoever looks the artifact up next recomputes it.
                aside = _move_aside(Path(row["path"]))
                log.warning("artifact %s (%s %s) does not match its record: %s; moved to %s, recomputing it", key,
                            row["kind"], row.get("name") or "", problem, aside)
                return None
        for col in ("input_hashes", "config", "meta"):
            if isinstance(row.get(col), str):
                row[col] = json.loads(row[col])
        row.pop("manifest", None)
        return row

    def verify_artifacts(self, *, full: bool = True) -> list[dict[str, Any]]:
        """Check every registered artifact against its manifest: ``[{key, kind, name, path, status, detail}]``.

        ``status`` is ``ok``, ``changed`` (or missing) or, for artifacts registered before
        manifests were kept, ``ok``/``changed`` by their full ``content_hash``.
        """
        out = []
        for r in self.query("SELECT artifact_key, kind, name, path, content_hash, manifest FROM artifacts ORDER BY created_at"):
            if r["manifest"]:
                problem = (full_check if full else quick_check)(r["path"], r["manifest"])
            elif not Path(r["path"]).exists():
                problem = f"{r['path']}: missing"
            else:
                problem = None if hash_path(r["path"]) == r["content_hash"] else f"{r['path']}: content hash differs"
            out.append({"key": r["artifact_key"], "kind": r["kind"], "name": r["name"], "path": r["path"],
                        "status": "changed" if problem else "ok", "detail": problem or ""})
        return out

    def latest_artifact(self, kind: str, name: str) -> dict[str, Any] | None:
        rows = self.query(
            "SELECT artifact_key FROM artifacts WHERE kind = ? AND name = ? ORDER BY created_at DESC LIMIT 1", [kind, name]
        )
        return self.artifact(rows[0]["artifact_key"]) if rows else None

    # -- models and metrics ----------------------------------------------------------------
    def register_model(self, model_id: str, path: str | os.PathLike, *, base_model: str | None = None,
                       method: str | None = None, pooling: str | None = None, run_id: str | None = None,
                       artifact_key: str | None = None, meta: Any = None) -> None:
        self.execute(
            "INSERT OR REPLACE INTO models (model_id, path, base_model, method, pooling, run_id, artifact_key, meta) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [model_id, str(path), base_model, method, pooling, run_id, artifact_key, _json(meta)],
        )

    def record_metrics(self, model_id: str, rows: Sequence[Mapping[str, Any]], run_id: str | None = None) -> None:
        """Replace this model's metrics for the (task, setting, metric, pooling) keys given."""
        with self.transaction() as con:
            for r in rows:
                con.execute(
                    "DELETE FROM metrics WHERE model_id = ? AND task = ? AND setting = ? AND metric = ? "
                    "AND coalesce(pooling, '') = coalesce(?, '')",
                    [model_id, r["task"], r["setting"], r["metric"], r.get("pooling")],
                )
                con.execute(
                    "INSERT INTO metrics (model_id, task, setting, metric, value, n, n_excluded, pooling, run_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [model_id, r["task"], r["setting"], r["metric"], float(r["value"]), r.get("n"), r.get("n_excluded"),
                     r.get("pooling"), run_id],
                )
            refresh_leaderboard_view(con)
