"""Catalog rows kept on disk: what a rebuilt catalog needs beyond the artifacts.

The catalog's artifact rows are rebuilt from the artifact records (:mod:`defsentflow.storage.records`).
A run's own rows (``runs``, ``stages``, PST's steps and result, the task outcomes, entry-space figures,
harvest statistics, claims) and a model's rows (``models``, ``metrics``) are kept as small JSON files
under ``<data root>/records/``: ``runs/<run id>.json`` and ``models/<id>-<hash>.json``. The
:class:`~defsentflow.storage.catalog.Catalog` rewrites them after every write that touches them
(start and end of a run, a stage, a model, its metrics, registered records), as a copy of the
catalog's rows, under a lock; callers never see them. ``catalog rebuild`` reads them back, as input:
each is validated (size, the tables and columns it may hold, each value's type, its id fits its
file name, the data root it was written in) before a row is inserted.

Example:
    >>> with artifact_lock(...), cat.connect(read_only=True) as con:
    ...     keep_rows(con, cat.root, "model", "pst-demo-1")
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from defsentflow.limits import LIMITS
from defsentflow.storage.atomic import atomic_path
from defsentflow.storage.bounded_json import loads_bounded, read_json_file
from defsentflow.storage.hashing import hash_text
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN
from defsentflow.storage.paths import place_folder, root_place
from defsentflow.storage.record_checks import RecordError

__all__ = ["MODEL_TABLES", "RECORDS_DIR", "RUN_TABLES", "RowRecord", "column_types", "keep_rows", "load_row_record",
           "keep_all", "keep_all_once", "lock_name", "restore_rows", "root_id", "row_record_path", "row_record_files"]

log = logging.getLogger(__name__)

RECORDS_DIR = place_folder("records")
MIGRATED = ".complete"  # records/.complete: every catalog row has had its row record written once
FORMAT = 1
# table -> the column that says whose row it is
RUN_TABLES: dict[str, str] = {"runs": "run_id", "stages": "run_id", "pst_steps": "run_id", "pst_runs": "run_id",
                              "run_tasks": "run_id", "entry_space_stats": "run_id", "harvest_stats": "run_id",
                              "claim_results": "claims_run_id"}
MODEL_TABLES: dict[str, str] = {"models": "model_id", "metrics": "model_id", "model_names": "model_id"}
_TABLES = {"run": RUN_TABLES, "model": MODEL_TABLES}
_RUN_ID = re.compile(IDENTIFIER_PATTERN)


def root_id(root: Path, *, create: bool = True) -> str | None:
    """The random id of this data root (``records/.root-id``, copied with the root): a row record
    from another root does not carry it."""
    f = root / RECORDS_DIR / ".root-id"
    try:
        text = f.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{32}", text):
            return text
    except (OSError, UnicodeDecodeError):
        pass
    if not create:
        return None
    with atomic_path(f) as tmp:
        tmp.write_text(uuid.uuid4().hex, encoding="ascii")
    return f.read_text(encoding="ascii").strip()


def row_record_path(root: Path, kind: str, ident: str) -> Path:
    """Where the rows of run ``ident`` (``kind="run"``) or model ``ident`` (``"model"``) are kept."""
    if kind == "run":
        if not _RUN_ID.fullmatch(ident):
            raise ValueError(f"run id {ident!r} is not allowed")
        return root_place(root, "run_records", f"{ident}.json")
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", ident)[:80].lstrip(".")
    return root_place(root, "model_records", f"{readable}-{hash_text(ident)[:16]}.json")


def row_record_files(root: Path, kind: str) -> list[Path]:
    folder = root_place(root, "run_records" if kind == "run" else "model_records")
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")) if folder.is_dir() else []


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def keep_rows(con: duckdb.DuckDBPyConnection, root: Path, kind: str, ident: str,
              tables: Sequence[str] | None = None) -> Path | None:
    """Write the catalog's rows of run or model ``ident`` (read on ``con``) to its row record, or remove
    the record when the catalog has none; the path written. Call it under the record's lock.

    ``tables``: only these tables changed (a stage row: ``runs`` and ``stages``); the others are kept
    from the record as it is, when it is one of this id (the end of a run writes them all again).
    """
    path = row_record_path(root, kind, ident)
    kept: dict[str, Any] = {}
    if tables is not None:
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            kept = dict(old["tables"]) if old.get("id") == ident and old.get("kind") == kind else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            tables = None  # no usable record: take every table
    for table, col in _TABLES[kind].items():
        if tables is not None and table not in tables:
            continue
        kept.pop(table, None)
        try:
            cur = con.execute(f"SELECT * FROM {table} WHERE {col} = ?", [ident])
        except duckdb.CatalogException:  # an older schema without the table
            continue
        rows = cur.fetchall()
        if rows:
            kept[table] = {"columns": [d[0] for d in cur.description], "rows": [[_plain(v) for v in r] for r in rows]}
    if not kept or (kind == "run" and "runs" not in kept):
        path.unlink(missing_ok=True)
        return None
    data = {"format": FORMAT, "kind": kind, "id": ident, "root_id": root_id(root), "tables": kept}
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, default=str), encoding="utf-8")
    return path


@dataclass
class RowRecord:
    """A validated row record: whose rows (``kind``, ``ident``) and, per table, columns and rows."""

    file: Path
    kind: str
    ident: str
    tables: dict[str, tuple[list[str], list[list[Any]]]] = field(default_factory=dict)


def column_types(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, tuple[str, bool]]]:
    """``{table: {column: (DuckDB type, nullable)}}`` of the catalog's tables."""
    out: dict[str, dict[str, tuple[str, bool]]] = {}
    for t, c, dtype, nullable in con.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = 'main'").fetchall():
        out.setdefault(t, {})[c] = (dtype, nullable == "YES")
    return out


_INTS = {"BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER"}


def _fits(value: Any, dtype: str) -> bool:
    if value is None:
        return True
    if dtype in ("VARCHAR", "JSON"):
        if not isinstance(value, str) or len(value) > LIMITS["record_text"]:
            return False
        if dtype == "JSON":
            try:
                loads_bounded(value)
            except ValueError:
                return False
        return True
    if dtype in _INTS:
        return isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63
    if dtype in ("DOUBLE", "FLOAT", "REAL"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if dtype == "BOOLEAN":
        return isinstance(value, bool)
    if dtype.startswith("TIMESTAMP") or dtype == "DATE":
        if not isinstance(value, str) or len(value) > 64:
            return False
        try:
            datetime.datetime.fromisoformat(value)
        except ValueError:
            return False
        return True
    if dtype.endswith("[]"):
        return isinstance(value, list) and len(value) <= LIMITS["record_items"] and all(_fits(v, dtype[:-2]) for v in value)
    return False


def load_row_record(root: Path, file: Path, kind: str, *, expected_root: str | None,
                    types: dict[str, dict[str, tuple[str, bool]]]) -> RowRecord:
    """The row record in ``file`` if it is to be trusted, else :class:`RecordError` saying why.

    Checked: size and nesting, the format; its id fits its file name; it was written in this data
    root; it holds only this kind's tables, known columns, rows of its own id and values of each
    column's type (NOT NULL columns set), at most ``LIMITS["record_items"]`` rows a table.
    """
    data = read_json_file(file, max_bytes=LIMITS["record_bytes"], what="row record")
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("kind") != kind:
        raise RecordError(f"not a {kind} row record (format {FORMAT})")
    ident, tables = data.get("id"), data.get("tables")
    if not isinstance(ident, str) or not ident or len(ident) > 256 or not isinstance(tables, dict):
        raise RecordError("its id or tables are missing or of the wrong type")
    try:
        expected_file = row_record_path(root, kind, ident)
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    if file.name != expected_file.name or file.parent.resolve() != expected_file.parent.resolve():
        raise RecordError(f"it holds the rows of {ident[:80]!r}, which are kept in {expected_file.name}")
    if expected_root is not None and data.get("root_id") != expected_root:
        raise RecordError("it was written in another data root (records/.root-id differs)")
    out = RowRecord(file, kind, ident)
    for table, body in tables.items():
        if table not in _TABLES[kind]:
            raise RecordError(f"a {kind} row record holds no {str(table)[:40]!r} rows")
        cols, rows = (body.get("columns"), body.get("rows")) if isinstance(body, dict) else (None, None)
        known = types.get(table, {})
        if not isinstance(cols, list) or not isinstance(rows, list) or len(set(map(str, cols))) != len(cols):
            raise RecordError(f"{table}: columns and rows must be lists")
        if unknown := [c for c in cols if c not in known]:
            raise RecordError(f"{table}: unknown column {str(unknown[0])[:40]!r}")
        if len(rows) > LIMITS["record_items"]:
            raise RecordError(f"{table}: {len(rows)} rows (limit {LIMITS['record_items']})")
        key = cols.index(_TABLES[kind][table]) if _TABLES[kind][table] in cols else None
        required = [c for c, (_, nullable) in known.items() if not nullable]
        if key is None or any(c not in cols for c in required):
            raise RecordError(f"{table}: a required column is missing")
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(cols):
                raise RecordError(f"{table} row {i}: expected {len(cols)} values")
            if row[key] != ident:
                raise RecordError(f"{table} row {i}: a row of {str(row[key])[:80]!r}, not of {ident[:80]!r}")
            for c, v in zip(cols, row):
                dtype, nullable = known[c]
                if (v is None and not nullable) or not _fits(v, dtype):
                    raise RecordError(f"{table} row {i}: {c} is not a {dtype}{'' if nullable else ' (required)'}")
        out.tables[table] = (cols, rows)
    if kind == "run" and "runs" not in out.tables:
        raise RecordError("a run row record without its runs row")
    return out


def restore_rows(con: duckdb.DuckDBPyConnection, rec: RowRecord) -> int:
    """Replace the catalog's rows of ``rec``'s id with the record's (inside the caller's transaction);
    the number of rows inserted."""
    n = 0
    for table, col in _TABLES[rec.kind].items():
        if table not in rec.tables:
            continue
        con.execute(f"DELETE FROM {table} WHERE {col} = ?", [rec.ident])
        cols, rows = rec.tables[table]
        con.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
        n += len(rows)
    return n


def lock_name(kind: str, ident: str) -> str:
    """The artifact-lock key guarding the row record of ``ident``."""
    return f"rows-{kind}-{hash_text(ident)[:16]}"


def keep_all(con: duckdb.DuckDBPyConnection, root: Path, kind: str, idents: Sequence[str],
             lock: Callable[[str], AbstractContextManager[Any]], tables: Sequence[str] | None = None) -> None:
    """:func:`keep_rows` for each of ``idents``, each under ``lock(lock_name(...))``; a record that cannot
    be written is a warning (the next write tries again), never a failed write."""
    for ident in dict.fromkeys(i for i in idents if i):
        try:
            with lock(lock_name(kind, ident)):
                keep_rows(con, root, kind, ident, tables)
        except (OSError, ValueError) as exc:
            log.warning("could not keep the rows of %s %s on disk: %s", kind, ident, exc)


def keep_all_once(con: duckdb.DuckDBPyConnection, root: Path,
                  lock: Callable[[str], AbstractContextManager[Any]]) -> bool:
    """Once per data root (``records/.complete``): the row records of every run and model the catalog
    holds, so that a root from before row records keeps its history through a rebuild. True if written."""
    marker = root / RECORDS_DIR / MIGRATED
    if marker.exists():
        return False
    try:
        runs = [r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()]
        models = [m for (m,) in con.execute("SELECT model_id FROM models UNION SELECT model_id FROM metrics").fetchall()]
    except duckdb.CatalogException:
        runs, models = [], []
    keep_all(con, root, "run", runs, lock)
    keep_all(con, root, "model", models, lock)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    return True

