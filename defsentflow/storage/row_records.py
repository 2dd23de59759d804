"""Catalog rows kept on disk: what a rebuilt catalog needs beyond the artifacts.

The catalog's artifact rows are rebuilt from the artifact records (:mod:`defsentflow.storage.records`).
A run's own rows (``runs``, ``stages``, PST's steps and result, the task outcomes, entry-space figures,
harvest statistics, claims), a model's rows (``models``, ``metrics``) and a sweep's (``sweeps``,
``sweep_points``) are kept as small JSON files under ``<data root>/records/``: ``runs/<run id>.json``,
``models/<id>-<hash>.json``, ``sweeps/<name>.json`` and an alias's history (``alias_changes``)
``aliases/<alias>-<hash>.json``, one kind per entry of :data:`ROW_KINDS`. The
:class:`~defsentflow.storage.catalog.Catalog` rewrites them after every write that touches them
(start and end of a run, a stage, a model, its metrics, registered records), as a copy of the
catalog's rows, under a lock; callers never see them. ``catalog rebuild`` reads them back, as input:
each is validated against its kind's entry (size, the tables and columns it may hold, each value's type,
finite numbers only, ids without control characters, paths inside the data root, its id fits its file
name, the data root it was written in) before a row is inserted.

Example:
    >>> with artifact_lock(...), cat.connect(read_only=True) as con:
    ...     keep_rows(con, cat.root, "model", "pst-demo-1")
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from defsentflow.limits import LIMITS
from defsentflow.storage.atomic import atomic_path
from defsentflow.storage.bounded_json import loads_bounded, read_json_file
from defsentflow.storage.hashing import hash_text
from defsentflow.storage.identifiers import ALIAS_PATTERN, IDENTIFIER_PATTERN
from defsentflow.storage.model_ids import BASE_PREFIXES
from defsentflow.storage.paths import ROOT_FOLDERS, OutsideRootError, inside_root, place_folder, root_place, to_root
from defsentflow.storage.record_checks import RecordError

__all__ = ["MODEL_TABLES", "RECORDS_DIR", "ROW_KINDS", "RUN_TABLES", "RowKind", "RowRecord", "column_types", "insert_rows",
           "keep_rows", "load_row_record", "keep_all", "keep_all_once", "lock_name", "path_problem", "restore_rows",
           "root_id", "row_record_path", "row_record_files"]

log = logging.getLogger(__name__)

RECORDS_DIR = place_folder("records")
MIGRATED = ".complete"  # records/.complete: every catalog row has had its row record written once
FORMAT = 1
_RUN_ID = re.compile(IDENTIFIER_PATTERN)
_MODEL_ID = re.compile(r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]{1,256}$")  # printable, as artifact records
_ALIAS = re.compile(ALIAS_PATTERN)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")  # minilm, org/name


@dataclass(frozen=True)
class RowKind:
    """One kind of row record: where its files lie, which tables it holds (table -> the column naming
    whose row it is), the table it cannot lack, its id rule and the columns that hold paths
    (``"root"``: inside the data root; ``"model"``: inside it, or an external base model's folder or
    name; ``"file"``: a user's file, anywhere). A new kind of catalog row kept on disk is one entry."""

    place: str  # its folder: a place of the data root's layout (storage.paths.DATA_ROOT_LAYOUT)
    tables: dict[str, str]
    required: str | None
    ident: re.Pattern[str]
    paths: dict[tuple[str, str], str] = field(default_factory=dict)
    hashed_name: bool = False  # the file name is <readable>-<hash of the id> (ids that are not identifiers)


ROW_KINDS: dict[str, RowKind] = {
    "run": RowKind("run_records", {"runs": "run_id", "stages": "run_id", "pst_steps": "run_id", "pst_runs": "run_id",
                            "run_tasks": "run_id", "entry_space_stats": "run_id", "harvest_stats": "run_id",
                            "claim_results": "claims_run_id"}, "runs", _RUN_ID,
                   {("pst_runs", "record_path"): "root", ("pst_steps", "entry_matrix_path"): "root",
                    ("entry_space_stats", "matrix_path"): "root", ("entry_space_stats", "plot_path"): "root"}),
    "model": RowKind("model_records", {"models": "model_id", "metrics": "model_id", "model_names": "model_id"}, None, _MODEL_ID,
                     {("models", "path"): "model"}, hashed_name=True),
    "sweep": RowKind("sweep_records", {"sweeps": "sweep", "sweep_points": "sweep"}, "sweeps", _RUN_ID,
                     {("sweep_points", "config_path"): "root", ("sweeps", "path"): "file", ("sweeps", "base_path"): "file"}),
    "alias": RowKind("alias_records", {"alias_changes": "alias"}, "alias_changes", _ALIAS, hashed_name=True),
}
# table -> the column that says whose row it is (kept for readers of the older names)
RUN_TABLES: dict[str, str] = ROW_KINDS["run"].tables
MODEL_TABLES: dict[str, str] = ROW_KINDS["model"].tables
_ROOT_ID = re.compile(r'"root_id": "([0-9a-f]{32})"')


def root_id(root: Path, *, create: bool = True) -> str | None:
    """The random id of this data root (``records/.root-id``, copied with the root): a row record
    from another root does not carry it. A lost or malformed id is recovered from the row records
    (the id most of them carry), never minted anew while records exist; ``create``: write it (a new
    one on a root without records), else only return it."""
    f = root_place(root, "records", ".root-id")
    try:
        text = f.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{32}", text):
            return text
    except (OSError, UnicodeDecodeError):
        pass
    recovered = _recover_root_id(root)
    if not create:
        return recovered
    try:
        with atomic_path(f) as tmp:
            tmp.write_text(recovered or uuid.uuid4().hex, encoding="ascii")
    except OSError:  # a read-only root: the recovered id still decides
        if recovered:
            return recovered
        raise
    if recovered:
        log.warning("records/.root-id was missing or malformed: recovered %s from the row records", recovered)
    return f.read_text(encoding="ascii").strip()


def _recover_root_id(root: Path) -> str | None:
    """The root id most row records carry (read from the head of each file), or None without records."""
    votes: Counter[str] = Counter()
    for kind in ROW_KINDS:
        for f in row_record_files(root, kind):
            try:
                with open(f, encoding="utf-8", errors="replace") as fh:
                    head = fh.read(4096)
            except OSError:
                continue
            if m := _ROOT_ID.search(head):
                votes[m.group(1)] += 1
    return votes.most_common(1)[0][0] if votes else None


def row_record_path(root: Path, kind: str, ident: str) -> Path:
    """Where the rows of ``kind`` (:data:`ROW_KINDS`) ``ident`` are kept (ValueError: an id its kind refuses,
    or a ``records/`` folder that leads out of the data root)."""
    spec = ROW_KINDS[kind]
    if not spec.ident.fullmatch(ident):
        raise ValueError(f"{kind} id {ident[:80]!r} is not allowed" + (" (a control character)" if kind == "model" else ""))
    if spec.hashed_name:
        readable = re.sub(r"[^A-Za-z0-9._-]", "_", ident)[:80].lstrip(".")
        return root_place(root, spec.place, f"{readable}-{hash_text(ident)[:16]}.json")
    return root_place(root, spec.place, f"{ident}.json")


def row_record_files(root: Path, kind: str) -> list[Path]:
    try:
        folder = root_place(root, ROW_KINDS[kind].place)
    except ValueError:  # records/ leads out of the data root: nothing there is read
        return []
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
    for table, col in ROW_KINDS[kind].tables.items():
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
    if not kept or (ROW_KINDS[kind].required and ROW_KINDS[kind].required not in kept):
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
    if dtype in ("DOUBLE", "FLOAT", "REAL"):  # finite only: NaN or infinity would sort a forged row first
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
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


def path_problem(root: Path, value: Any, rule: str, row: dict[str, Any]) -> str | None:
    """Why a stored path may not stand in a row record (None: it may). ``rule`` as in :class:`RowKind`."""
    if value is None or rule == "file":
        return None
    text = str(value)
    parts = text.replace("\\", "/").split("/")
    if any(ord(c) < 32 for c in text) or any(p in (".", "..") for p in parts) or text.startswith("~"):
        return f"{text[:120]!r} is not a plain path ('..', '.', '~' or a control character)"
    external = rule == "model" and str(row.get("model_id", "")).startswith(BASE_PREFIXES)  # base model ids
    if os.path.isabs(text):
        if not external:
            return f"{text[:120]!r} is an absolute path (only an external base model's folder may be)"
        if not Path(to_root(root, text)).is_absolute():
            return f"{text[:120]!r} is an absolute path inside the data root (stored paths there are relative)"
        return None
    if parts[0] not in ROOT_FOLDERS:
        if external and _NAME.fullmatch(text) and not (root / parts[0]).exists():
            return None  # a base model's name: minilm, a hub id
        return f"{text[:120]!r} is not a path of the data root's folders"
    try:
        inside_root(root, text)
    except OutsideRootError as exc:
        return str(exc)
    return None


def load_row_record(root: Path, file: Path, kind: str, *, expected_root: str | None,
                    types: dict[str, dict[str, tuple[str, bool]]], named: Path | None = None) -> RowRecord:
    """The row record in ``file`` if it is to be trusted, else :class:`RecordError` saying why.

    Checked against its kind's entry in :data:`ROW_KINDS`: size and nesting, the format; its id fits
    its kind's rule and its file name; it was written in this data root; it holds only its kind's
    tables, known columns, rows of its own id and values of each column's type (NOT NULL columns set,
    numbers finite), paths of the data root (or an external base model's), at most
    ``LIMITS["record_items"]`` rows a table. ``named``: where it is filed, when not at ``file``.
    """
    spec = ROW_KINDS[kind]
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
    named = named or file  # where the record is filed (a quarantined one: where it was)
    if named.name != expected_file.name or named.parent.resolve() != expected_file.parent.resolve():
        raise RecordError(f"it holds the rows of {ident[:80]!r}, which are kept in {expected_file.name}")
    if expected_root is not None and data.get("root_id") != expected_root:
        raise RecordError("it was written in another data root (records/.root-id differs)")
    out = RowRecord(file, kind, ident)
    for table, body in tables.items():
        if table not in spec.tables:
            raise RecordError(f"a {kind} row record holds no {str(table)[:40]!r} rows")
        cols, rows = (body.get("columns"), body.get("rows")) if isinstance(body, dict) else (None, None)
        known = types.get(table, {})
        if not isinstance(cols, list) or not isinstance(rows, list) or len(set(map(str, cols))) != len(cols):
            raise RecordError(f"{table}: columns and rows must be lists")
        if unknown := [c for c in cols if c not in known]:
            raise RecordError(f"{table}: unknown column {str(unknown[0])[:40]!r}")
        if len(rows) > LIMITS["record_items"]:
            raise RecordError(f"{table}: {len(rows)} rows (limit {LIMITS['record_items']})")
        key = cols.index(spec.tables[table]) if spec.tables[table] in cols else None
        required = [c for c, (_, nullable) in known.items() if not nullable]
        if key is None or any(c not in cols for c in required):
            raise RecordError(f"{table}: a required column is missing")
        checks = [(i, dtype, nullable, spec.paths.get((table, c))) for i, c in enumerate(cols)
                  for dtype, nullable in [known[c]]]
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(cols):
                raise RecordError(f"{table} row {i}: expected {len(cols)} values")
            if row[key] != ident:
                raise RecordError(f"{table} row {i}: a row of {str(row[key])[:80]!r}, not of {ident[:80]!r}")
            for j, dtype, nullable, path_rule in checks:
                v = row[j]
                if (v is None and not nullable) or not _fits(v, dtype):
                    what = " (finite numbers only)" if dtype == "DOUBLE" and v is not None else ""
                    raise RecordError(f"{table} row {i}: {cols[j]} is not a {dtype}{'' if nullable else ' (required)'}{what}")
                if path_rule and v is not None and (why := path_problem(root, v, path_rule, dict(zip(cols, row)))):
                    raise RecordError(f"{table} row {i}: {cols[j]} {why}")
        out.tables[table] = (cols, rows)
    if spec.required and spec.required not in out.tables:
        raise RecordError(f"a {kind} row record without its {spec.required} row")
    return out


def restore_rows(con: duckdb.DuckDBPyConnection, rec: RowRecord,
                 types: dict[str, dict[str, tuple[str, bool]]] | None = None) -> int:
    """Replace the catalog's rows of ``rec``'s id with the record's (inside the caller's transaction);
    the number of rows inserted. The rows go in as one Arrow table per table (cast to the columns'
    types by DuckDB), so the cost grows with the rows, not with a statement per row."""
    types = types if types is not None else column_types(con)
    n = 0
    for table, col in ROW_KINDS[rec.kind].tables.items():
        if table not in rec.tables:
            continue
        con.execute(f"DELETE FROM {table} WHERE {col} = ?", [rec.ident])
        cols, rows = rec.tables[table]
        if rows:
            insert_rows(con, table, cols, rows, types[table])
        n += len(rows)
    return n


def _arrow_type(dtype: str) -> pa.DataType:
    if dtype.endswith("[]"):
        return pa.list_(_arrow_type(dtype[:-2]))
    if dtype in _INTS:
        return pa.int64()
    if dtype in ("DOUBLE", "FLOAT", "REAL"):
        return pa.float64()
    if dtype == "BOOLEAN":
        return pa.bool_()
    return pa.string()  # VARCHAR, JSON, timestamps (cast by DuckDB on insert)


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]],
                types: dict[str, tuple[str, bool]]) -> None:
    """``INSERT INTO table (cols)`` of ``rows`` (JSON-typed values, as a record holds them) in one statement."""
    arrays = [pa.array([r[i] for r in rows], type=_arrow_type(types[c][0])) for i, c in enumerate(cols)]
    batch = pa.table(dict(zip([f"c{i}" for i in range(len(cols))], arrays)))
    casts = ", ".join(f"CAST(c{i} AS {types[c][0]})" for i, c in enumerate(cols))
    con.register("_restored_rows", batch)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {casts} FROM _restored_rows")
    finally:
        con.unregister("_restored_rows")


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
        except OutsideRootError:
            raise  # records/ or locks/ lead out of the data root: the write is refused, one line
        except (OSError, ValueError) as exc:
            log.warning("could not keep the rows of %s %s on disk: %s", kind, ident, exc)


def keep_all_once(con: duckdb.DuckDBPyConnection, root: Path,
                  lock: Callable[[str], AbstractContextManager[Any]]) -> bool:
    """Once per data root (``records/.complete``): the row records of every run and model the catalog
    holds, so that a root from before row records keeps its history through a rebuild. True if written."""
    marker = root_place(root, "records", MIGRATED)
    if marker.exists():
        return False
    queries = {"run": "SELECT run_id FROM runs", "model": "SELECT model_id FROM models UNION SELECT model_id FROM metrics",
               "sweep": "SELECT sweep FROM sweeps", "alias": "SELECT DISTINCT alias FROM alias_changes"}
    for kind, sql in queries.items():
        try:
            idents = [r for (r,) in con.execute(sql).fetchall()]
        except duckdb.CatalogException:
            idents = []
        keep_all(con, root, kind, idents, lock)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    return True

