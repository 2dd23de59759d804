"""The DuckDB catalog: runs, stages, artifacts, models, metrics and the dictionary tables.

DuckDB lets one process hold a database file for writing, and then every other process fails
to open it, even read-only. So the catalog is never held open across long work: every call
opens a short-lived connection, does its statements in one transaction and closes it, waiting
while another process holds the file (new reads wait for a waiting writer). Within one process, connections are
serialised by a lock (DuckDB refuses a second connection of another configuration, e.g. a
writable one beside a read-only one, in the same process), so threads may share a Catalog.

Paths (``artifacts.path``, ``models.path``) are stored relative to the data root and resolved
against the current root when read (:meth:`Catalog.query`), so a copied or moved root reads only
its own files. A reader (``Catalog(root, reader=True)``: leaderboard, report, sql, serve, revdict)
never creates the catalog, never applies schema changes and opens it read-only, so it works on a
read-only data root.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

import defsentflow.storage.locks as locks
import defsentflow.storage.records as records_module
import defsentflow.storage.row_records as row_records
import defsentflow.storage.runs as runs_module
from defsentflow.limits import DUCKDB_READER
from defsentflow.storage.catalog_template import create_catalog_file
from defsentflow.storage.hashing import code_version, hash_path
from defsentflow.storage.identifiers import check_identifier
from defsentflow.storage.leaderboard_view import refresh_leaderboard_view
from defsentflow.storage.locks import CatalogLockedError, artifact_lock, writer_shared, writers_excluded
from defsentflow.storage.manifest import full_check, quick_check
from defsentflow.storage.paths import data_root, from_root, resolved_tree, to_root
from defsentflow.storage.query_limit import QueryTimeoutError, time_limit
from defsentflow.storage.schema import SANDBOX, migrate, parse_one_read_statement, pending_ddl
from defsentflow.storage.schema import first_line as _first_line

__all__ = ["Catalog", "CatalogAccessError", "CatalogError", "CatalogLockedError", "CatalogSchemaError",
           "QueryTimeoutError", "SANDBOX", "migrate", "parse_one_read_statement", "pending_ddl"]

log = logging.getLogger(__name__)

STORAGE_COMPATIBILITY = "v1.4.0"
_LOCK_MARKERS = ("Could not set lock", "Conflicting lock", "database is locked", "lock on file")
_READ_ONLY_MARKERS = ("Read-only file system", "Permission denied", "read-only")


class CatalogAccessError(RuntimeError):
    """A catalog opened where none may be: a Dask worker (``DEFSENTFLOW_WORKER=1``)."""


class CatalogError(ValueError):
    """The catalog is missing (for a reader) or unreadable; one line naming the file and the fix."""


class CatalogSchemaError(CatalogError, duckdb.CatalogException):
    """A reader met a table or view that its (older) catalog does not have yet."""


# One connection at a time per process (re-entrant: a thread may nest an open inside its own), and how
# deep the nesting is now (a nested read never waits for a writer that may be waiting for this process).
_PROCESS_LOCK = threading.RLock()
_DEPTH = [0]
# Catalog files open in this process: path -> (read-only, config) of the outermost connection. An open
# inside it reuses DuckDB's instance of the file (0.6 ms, not 20) if opened the same way (DuckDB refuses
# another configuration): a read inside a write opens for writing.
_OPEN: dict[str, tuple[bool, dict[str, Any]]] = {}
_REBUILD_HINT = "run `defsentflow catalog rebuild` to rebuild it from the artifact records"


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

    def __init__(self, root: str | os.PathLike | None = None, *, lock_timeout: float | None = None, create: bool = True,
                 reader: bool = False, query_timeout: float | None = None):
        self.reader = reader
        self.root = data_root(root, create=create and not reader)
        self.path = self.root / "catalog.duckdb"
        self.lock_timeout = locks.lock_timeout_s() if lock_timeout is None else lock_timeout  # --lock-timeout
        self.query_timeout = query_timeout

    # -- connections ---------------------------------------------------------------------
    def _open(self, read_only: bool, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        """``duckdb.connect`` through the one wait for the file (:func:`~defsentflow.storage.locks.connect_waiting`:
        a writer that waits takes its turn, a read gives way to it first)."""
        if os.environ.get("DEFSENTFLOW_WORKER") == "1":
            raise CatalogAccessError(f"catalog opened on a Dask worker: {self.path} (workers write artifact records; "
                                     "the flow process registers them)")
        return locks.connect_waiting(lambda: duckdb.connect(str(self.path), read_only=read_only, config=config), self.root,
                                     writer=not read_only, timeout=self.lock_timeout, give_way=_DEPTH[0] == 1,
                                     locked=lambda exc: self._locked(exc, read_only), what=self.path)

    def _locked(self, exc: Exception, read_only: bool) -> bool:
        """Whether ``exc`` says that another process holds the file; a read-only root or a corrupt file is its line."""
        if not isinstance(exc, duckdb.Error):
            return False
        if any(m in str(exc) for m in _LOCK_MARKERS):
            return True
        if not read_only and any(m in str(exc) for m in _READ_ONLY_MARKERS):
            raise CatalogError(f"{self.path}: cannot open the catalog for writing ({_first_line(exc)[:160]}); "
                               "the data root is read-only: reading commands work, writing ones need a "
                               "writable root (--home)") from exc
        if self.path.is_file() and ("not a valid DuckDB database" in str(exc) or "orrupt" in str(exc)):
            raise CatalogError(f"{self.path}: the catalog is corrupt ({_first_line(exc)[:120]}); "
                               f"{_REBUILD_HINT} (it keeps the corrupt file beside it)") from exc
        return False

    def _schema_key(self) -> str:
        # The inode too: a catalog deleted and created again at the same path is a new catalog.
        return f"{self.path}:{self.path.stat().st_ino}"

    @contextlib.contextmanager
    def connect(self, read_only: bool = False, *, config: Mapping[str, Any] | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open a connection whose schema is up to date (see :func:`migrate`).

        A read-only open of a catalog whose schema is behind first brings it up to date with a
        short writable open; a read-only open of a missing catalog creates it. A reader catalog
        does neither: it opens what is there read-only (a missing catalog is a :class:`CatalogError`).
        """
        with _PROCESS_LOCK:
            _DEPTH[0] += 1
            try:
                if self.reader:
                    yield from self._reader_connect(config)
                    return
                yield from self._writer_connect(read_only, config)
            finally:
                _DEPTH[0] -= 1

    def _reader_connect(self, config: Mapping[str, Any] | None) -> Iterator[duckdb.DuckDBPyConnection]:
        if not self.path.is_file():
            raise CatalogError(f"no catalog at {self.path} (a run or an ingest creates it; if artifacts are there, "
                               f"{_REBUILD_HINT})")
        outer = _OPEN.get(str(self.path))
        if outer is not None and not config:  # inside this process's open of the file: opened as it was
            con = self._open(outer[0], dict(outer[1]))
        else:
            con = self._open(True, {**DUCKDB_READER, **(config or {})})  # bounded: a read never takes the machine
        try:
            yield con
        finally:
            con.close()

    def exclusive(self) -> contextlib.AbstractContextManager[None]:
        """Hold the catalog's writer lock alone (``catalog rebuild``): every other writer of the data
        root, in any process, waits until this block ends (:func:`~defsentflow.storage.locks.writers_excluded`)."""
        return writers_excluded(self.root)

    def _writer_connect(self, read_only: bool, config: Mapping[str, Any] | None) -> Iterator[duckdb.DuckDBPyConnection]:
        with writer_shared(self.root, self.lock_timeout):  # a rebuild in progress: wait, saying so
            yield from self._writer_open(read_only, config)

    def _writer_open(self, read_only: bool, config: Mapping[str, Any] | None) -> Iterator[duckdb.DuckDBPyConnection]:
        if read_only and not self.path.exists():
            read_only = False  # nothing to read yet: create the schema first
        cfg = dict(config or {})
        # A new file: a copy of this process's template (storage/catalog_template.py; a worker: _open refuses),
        # in a format the DuckDB 1.4+ CLI (PyPI: duckdb-cli) reads too (`duckdb storage/catalog.duckdb -c ...`).
        if not self.path.exists() and (os.environ.get("DEFSENTFLOW_WORKER") == "1" or
                                       not create_catalog_file(self.path, STORAGE_COMPATIBILITY)):
            cfg["storage_compatibility_version"] = STORAGE_COMPATIBILITY
        path_key = str(self.path)
        outer = _OPEN.get(path_key)
        if outer is not None and not config:
            if outer[0] and not read_only:
                raise CatalogError(f"{self.path}: a write inside a read-only catalog session "
                                   "(Catalog.session(read_only=True) is for reads only)")
            read_only, cfg = outer[0], dict(outer[1])  # opened as the outer one was (_OPEN)
        con = self._open(read_only, cfg)
        try:
            key = self._schema_key()
            if key not in Catalog._ddl_applied:
                if not read_only:
                    migrate(con)
                    row_records.root_id(self.root)  # a root with a catalog has its id (recovered if lost)
                    row_records.keep_all_once(con, self.root, lambda name: artifact_lock(name, self.root))
                elif pending_ddl(con):
                    con.close()
                    with self.connect():  # a writable open migrates
                        pass
                    con = self._open(read_only, cfg)
                Catalog._ddl_applied.add(key)
            if outer is None and not config:
                _OPEN[path_key] = (read_only, dict(cfg))
            yield con
        finally:
            con.close()
            if outer is None and not config:
                _OPEN.pop(path_key, None)

    @contextlib.contextmanager
    def session(self, read_only: bool = False) -> Iterator[None]:
        """Hold the catalog open for a short burst of calls in this thread: each :meth:`connect` of
        this file inside reuses the database instance held (one 20 ms instance start for the burst,
        not one per call); each call keeps its own connection and transaction. Other processes wait
        for the file meanwhile: a block of catalog calls, never a computation. ``read_only=True``
        refuses a write (``with cat.session(read_only=True): a, b = cat.query(...), cat.query(...)``)."""
        with self.connect(read_only=read_only):
            yield

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
            raise CatalogError(f"no catalog at {self.path} (an ingest creates it)")
        if not self.reader:
            with self.connect(read_only=True):  # bring an older schema up to date (our DDL only)
                pass
        with self.connect(read_only=True, config=SANDBOX) as con:
            try:
                with time_limit(con, self.query_timeout):
                    cur = con.execute(statements)
                    cols = [d[0] for d in cur.description] if cur.description else []
                    return cols, cur.fetchall()
            except QueryTimeoutError:
                raise
            except duckdb.Error as exc:
                raise ValueError(_first_line(exc)) from exc

    def _resolve(self, cols: Sequence[str], rows: list[tuple]) -> list[tuple]:
        """Stored root-relative paths (columns ``path``, ``*_path``) made absolute under this root."""
        idx = [i for i, c in enumerate(cols) if c == "path" or c.endswith("_path")]
        if not idx or not rows:
            return rows
        out = []
        for row in rows:
            row = list(row)
            for i in idx:
                row[i] = from_root(self.root, row[i])
            out.append(tuple(row))
        return out

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None, *,
                keep: tuple[str, Sequence[str]] | tuple[str, Sequence[str], Sequence[str]] | None = None) -> None:
        """Run one writing statement in its own transaction; ``keep=(kind, ids[, tables])``: then rewrite
        the row records of those runs or models (those tables) on the same connection (:meth:`keep_rows`)."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            con.execute(sql, params or [])
            con.execute("COMMIT")
            if keep:
                self._keep_on(con, *keep)

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
        """Run a read query and return rows as dicts (stored paths resolved under this root)."""
        cols, rows = self.query_table(sql, params)
        return [dict(zip(cols, row)) for row in rows]

    def query_table(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> tuple[list[str], list[tuple]]:
        with self.connect(read_only=True) as con, time_limit(con, self.query_timeout):
            try:
                cur = con.execute(sql, params or [])
            except duckdb.CatalogException as exc:
                if not self.reader:
                    raise
                # A reader never applies schema changes: an older catalog lacks what is not there yet.
                raise CatalogSchemaError(f"{self.path}: {_first_line(exc)[:160]}; the catalog's schema is older than "
                                         "this code: a writing command (a run, an ingest, `defsentflow catalog "
                                         "rebuild`) brings it up to date") from exc
            cols = [d[0] for d in cur.description] if cur.description else []
            return cols, self._resolve(cols, cur.fetchall())

    def keep_rows(self, kind: str, idents: Sequence[str]) -> None:
        """Rewrite the on-disk row records of these runs (``kind="run"``) or models (``"model"``) from the
        catalog's rows (:func:`~defsentflow.storage.row_records.keep_all`)."""
        with self.connect(read_only=True) as con:
            self._keep_on(con, kind, idents)

    def _keep_on(self, con: duckdb.DuckDBPyConnection, kind: str, idents: Sequence[str],
                 tables: Sequence[str] | None = None) -> None:
        row_records.keep_all(con, self.root, kind, idents, lock=lambda name: artifact_lock(name, self.root),
                             tables=tables)

    def rel(self, path: str | os.PathLike) -> str:
        """``path`` as the catalog stores it (relative to the data root when inside it)."""
        return to_root(self.root, path)

    # -- runs and stages -------------------------------------------------------------------
    def start_run(self, flow: str, config: Any = None, config_hash: str | None = None, run_id: str | None = None) -> str:
        """Open (or reopen) a ``running`` row owned by this process (host, pid); see
        :func:`defsentflow.storage.runs.recorded_run`, which every sequencer uses."""
        run_id = check_identifier(run_id or uuid.uuid4().hex[:12], "run id")
        host, pid = runs_module.owner()
        self.execute(
            "INSERT INTO runs (run_id, flow, config, config_hash, code_version, status, host, pid) "
            "VALUES (?, ?, ?, ?, ?, 'running', ?, ?) "
            "ON CONFLICT (run_id) DO UPDATE SET status = 'running', ended_at = NULL, host = excluded.host, pid = excluded.pid",
            [run_id, flow, _json(config), config_hash, code_version(), host, pid], keep=("run", [run_id], ["runs"]),
        )
        return run_id

    def end_run(self, run_id: str, status: str = "completed", note: str | None = None, *, flow: str | None = None) -> None:
        """Close a run. A pipeline run is closed only by the pipeline (``flow="pipeline"``): stage
        flows that share its run id (so lineage stays one run) cannot end it early."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            con.execute("UPDATE runs SET status = ?, ended_at = current_timestamp, note = coalesce(?, note) "
                        "WHERE run_id = ? AND (flow = ? OR (? IS NULL AND flow <> 'pipeline'))",
                        [status, note, run_id, flow, flow])
            con.execute("COMMIT")
            linked = con.execute("SELECT model_id FROM models WHERE run_id = $r UNION "
                                 "SELECT model_id FROM metrics WHERE run_id = $r", {"r": run_id}).fetchall()
            self._keep_on(con, "run", [run_id])  # the run's rows and its models' (ids filed by any writer)
            self._keep_on(con, "model", [m for (m,) in linked])

    def recorded_run(self, flow: str, run_id: str | None, *, config: Any = None,
                     config_hash: str | None = None) -> contextlib.AbstractContextManager[runs_module.RunRecord]:
        """:func:`defsentflow.storage.runs.recorded_run` on this catalog."""
        return runs_module.recorded_run(self, flow, run_id, config=config, config_hash=config_hash)

    def record_stage(self, run_id: str, stage: str, status: str, cache_key: str | None = None,
                     seconds: float | None = None, note: str | None = None) -> None:
        self.execute(
            "INSERT INTO stages (run_id, stage, cache_key, status, ended_at, seconds, note) "
            "VALUES (?, ?, ?, ?, current_timestamp, ?, ?)",
            [run_id, stage, cache_key, status, seconds, note], keep=("run", [run_id], ["runs", "stages"]),
        )

    # -- artifacts -------------------------------------------------------------------------
    def register_artifact(self, key: str, kind: str, path: str | os.PathLike, content_hash: str, *,
                          name: str | None = None, input_hashes: Mapping[str, str] | None = None,
                          config: Any = None, run_id: str | None = None, meta: Any = None,
                          con: duckdb.DuckDBPyConnection | None = None) -> None:
        """Record a complete artifact. Call only after its files are in place.

        Its manifest (each file's size, quick hash and full hash) is stored too, so that
        :meth:`artifact` can tell a changed or damaged artifact from the one registered, and the
        same row is written beside the artifact as its record (:mod:`defsentflow.storage.records`),
        from which a lost catalog is rebuilt.
        """
        rec = records_module.make_record(self.root, key=key, kind=kind, path=path, content_hash=content_hash, name=name,
                          input_hashes=input_hashes, config=config, run_id=run_id, meta=meta)
        if not Path(rec["path"]).is_absolute():  # never write into a folder outside the data root
            rec = records_module.settle_record(path, rec)
        if con is not None:
            records_module.register_records(con, self.root, [rec])
        else:
            with self.transaction() as tx:
                records_module.register_records(tx, self.root, [rec])

    def register_records(self, records: Sequence[Mapping[str, Any]]) -> int:
        """Register artifact records (written by :func:`~defsentflow.storage.records.write_record`,
        e.g. on a worker) in one transaction; idempotent. The number of records."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                n = records_module.register_records(con, self.root, list(records))
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            self._keep_on(con, "model", [m["model_id"] for r in records
                                         for m in [r.get("model") or {}, *(r.get("metrics") or [])] if m.get("model_id")])
        return n

    def artifact(self, key: str) -> dict[str, Any] | None:
        """The artifact registered under ``key`` if its files are still the ones registered, else None.

        The files are checked against the manifest (names, sizes, quick hashes): a changed or
        damaged artifact is reported (a warning) and treated as absent, so its stage recomputes.
        """
        rows = self.query("SELECT * FROM artifacts WHERE artifact_key = ?", [key])  # path resolved under this root
        if not rows or not Path(rows[0]["path"]).exists():
            return None
        row = rows[0]
        if row.get("manifest"):
            problem = quick_check(row["path"], row["manifest"])
            if problem:
                # Moved aside (hidden, kept for inspection) so that no stage falls back to the
                # changed files on disk: whoever looks the artifact up next recomputes it.
                aside = None if self.reader else _move_aside(Path(row["path"]))
                log.warning("artifact %s (%s %s) does not match its record: %s; moved to %s, recomputing it", key,
                            row["kind"], row.get("name") or "", problem, aside)
                return None
        for col in ("input_hashes", "config", "meta"):
            if isinstance(row.get(col), str):
                row[col] = resolved_tree(self.root, json.loads(row[col]))
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
                       artifact_key: str | None = None, meta: Any = None, names: Sequence[tuple[str, str]] = (),
                       keep: bool = False) -> None:
        """File a model under ``model_id`` (and ``names``, ``[(name, kind)]``, that stand for it) through
        the one writer (:func:`~defsentflow.storage.records.write_model_row`), mirrored to its row
        record and to the artifact record of its folder. ``keep``: an existing row is left as it is."""
        row = {"model_id": model_id, "path": path, "base_model": base_model, "method": method, "pooling": pooling,
               "run_id": run_id, "artifact_key": artifact_key, "meta": meta}
        with self.transaction() as con:
            records_module.write_model_row(con, self.root, {**row, "names": list(names), "keep": keep})
        self.keep_rows("model", [model_id])
        if not keep:
            records_module.amend_record(self.root, path, model=row)

    def record_metrics(self, model_id: str, rows: Sequence[Mapping[str, Any]], run_id: str | None = None) -> None:
        """Replace this model's metrics for the (task, setting, metric, pooling) keys given."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
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
            con.execute("COMMIT")
            self._keep_on(con, "model", [model_id])
        found = self.query("SELECT path FROM models WHERE model_id = ?", [model_id])
        if found and found[0]["path"]:
            records_module.amend_record(self.root, found[0]["path"],
                                        metrics=[{**r, "model_id": model_id, "run_id": run_id} for r in rows])
