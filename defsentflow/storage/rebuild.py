"""Rebuilding the catalog from what the data root holds (``defsentflow catalog rebuild``), and healing
a lost or emptied catalog when a run starts.

The catalog's artifacts, models, metrics and run rows (runs, stages, PST steps and result, task
outcomes, entry-space figures, harvest statistics, claims) are rebuilt from the artifact records
(:mod:`~defsentflow.storage.records`) and the row records (:mod:`~defsentflow.storage.row_records`).
Both are input: each record is checked (:func:`~defsentflow.storage.record_checks.check_artifact_record`,
:func:`~defsentflow.storage.row_records.load_row_record`), tried on a scratch in-memory catalog of the
same schema, and refused when it fails, when two records claim one artifact key or one model id for
different paths, or when a model row names a path inside the root that no trusted record holds. A
refused record is moved to ``quarantine/records/`` with its reason and the rebuild goes on. Rows
whose records are gone are removed: the rebuilt tables hold what the records say, nothing else.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from pyarrow import ArrowException

import defsentflow.storage.records as records_module
import defsentflow.storage.row_records as rows_module
from defsentflow.storage.catalog import Catalog, CatalogError
from defsentflow.storage.leaderboard_view import refresh_leaderboard_view
from defsentflow.storage.locks import artifact_lock
from defsentflow.storage.manifest import full_check
from defsentflow.storage.model_ids import content_id_problem, recorded_content_hash
from defsentflow.storage.paths import data_root, from_root, to_root
from defsentflow.storage.record_checks import RecordError, check_artifact_record, quarantine_record
from defsentflow.storage.restore import restore_dictionaries, return_quarantined
from defsentflow.storage.schema import first_line, migrate

__all__ = ["Scan", "UntrustedReference", "heal_catalog", "rebuild_catalog", "scan_records"]

log = logging.getLogger(__name__)


class UntrustedReference(RecordError):
    """A record that is well-formed but names a path or artifact no trusted record holds: left out (and
    left in place, for a later rebuild once that artifact is back), not moved aside."""


@dataclass
class Scan:
    """What the records under a data root say, after every check."""

    artifacts: list[dict[str, Any]] = field(default_factory=list)
    models: list[rows_module.RowRecord] = field(default_factory=list)
    runs: list[rows_module.RowRecord] = field(default_factory=list)
    sweeps: list[rows_module.RowRecord] = field(default_factory=list)
    aliases: list[rows_module.RowRecord] = field(default_factory=list)  # each alias's history
    refused: list[tuple[Path, str]] = field(default_factory=list)      # (record file, why)
    left_out: list[str] = field(default_factory=list)  # records left in place, unused: they name what is not trusted


def rebuild_catalog(root: str | os.PathLike | None = None, *, only_if_lost: bool = False) -> dict[str, Any] | None:
    """Rebuild the catalog's tables from the records under the data root, in one transaction, holding
    the catalog's writer lock for the whole run (writers of other processes wait, saying so).

    Returns the counts ``{"records", "row_records", "artifacts", "models", "metrics", "runs",
    "dictionaries", "refused", "quarantined", "returned"}``, ``"problems"`` (one line per refused record),
    ``"left_out"`` (one line per record left in place because it names something not trusted),
    ``"corrupt_moved": 1`` when a corrupt catalog was kept aside as ``catalog.duckdb.corrupt-<time>``
    and ``"records_written"`` for artifacts registered before records existed. A missing catalog is
    created; a rebuild of a complete catalog changes nothing. ``only_if_lost`` (the heal a run starts
    with): None, nothing done, when the catalog holds artifacts or runs once the lock is held: another
    process's run may have started on this root meanwhile (two runs or sweep points on a fresh root),
    and its catalog is live, not lost.

    Raises:
        CatalogError: the catalog cannot be written (a read-only data root), one line.
    """
    root = data_root(root, create=False)
    if not root.is_dir():
        raise ValueError(f"no data root at {root}")
    cat = Catalog(root)
    with cat.exclusive():
        return None if only_if_lost and _catalog_in_use(root) else _rebuild(cat)


def _rebuild(cat: Catalog) -> dict[str, Any]:
    root = cat.root
    moved = written = 0
    if cat.path.is_file():
        try:
            cat.query("SELECT 1")
        except CatalogError:  # corrupt: kept for inspection, never deleted
            os.replace(cat.path, cat.path.with_name(f"catalog.duckdb.corrupt-{time.strftime('%Y%m%dT%H%M%S')}"))
            moved = 1
        else:
            with cat.connect():  # a read-only root fails here, before anything is moved
                pass
            written = _write_missing_records(cat)
            _keep_live_rows(cat)
    with cat.connect(read_only=True) as con:
        types = rows_module.column_types(con)
    returned = return_quarantined(root, types)
    scan = scan_records(root, types)
    quarantined = sum(quarantine_record(root, f, why) is not None for f, why in scan.refused)
    with cat.transaction() as con:
        _restore(con, root, scan, types)
    counts: dict[str, Any] = {"records": len(scan.artifacts),
                              "row_records": len(scan.models) + len(scan.runs) + len(scan.sweeps) + len(scan.aliases)}
    tables = ("artifacts", "models", "metrics", "runs", "dictionaries", "alias_changes")
    counts.update(cat.query("SELECT " + ", ".join(f"(SELECT count(*) FROM {t}) AS {t}" for t in tables))[0])
    counts.update(refused=len(scan.refused), quarantined=quarantined, left_out=scan.left_out, returned=returned,
                  problems=[f"{f.relative_to(root).as_posix()}: {why}" for f, why in scan.refused])
    if moved:
        counts["corrupt_moved"] = moved
    elif written:
        counts["records_written"] = written
    return counts


def heal_catalog(root: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """Rebuild a missing, emptied or corrupt catalog from the records under the data root (what a run
    does when it starts, and what a writing command does after a crash or a full disk left the catalog
    unreadable; each refused record is a warning, one line); None when the catalog holds artifacts
    or runs already (checked again under the writer lock) or there are no records."""
    root = data_root(root)
    if _catalog_in_use(root):
        return None
    if next(records_module.iter_record_files(root), None) is None and not rows_module.row_record_files(root, "run"):
        return None
    counts = rebuild_catalog(root, only_if_lost=True)  # checked again under the writer lock
    if counts is None:
        return None
    for line in counts["problems"]:
        log.warning("record refused and moved to quarantine/records/: %s", line)
    return counts


def _catalog_in_use(root: Path) -> bool:
    """Whether ``root`` has a readable catalog holding artifacts or runs (nothing to heal: a run writes
    its ``runs`` row before any record, so a catalog with one is live, not lost)."""
    if not (root / "catalog.duckdb").exists():
        return False
    try:
        return bool(Catalog(root).query("SELECT (SELECT count(*) FROM artifacts) + (SELECT count(*) FROM runs) AS n")[0]["n"])
    except CatalogError:  # corrupt (a full disk, a crash): rebuilt, the corrupt file kept aside
        return False


# -- reading the records ----------------------------------------------------------------------------------
def scan_records(root: Path, types: dict[str, dict[str, tuple[str, bool]]]) -> Scan:
    """Every record under ``root`` that passes its checks (see the module doc); the others in ``refused``."""
    scan = Scan()
    found: list[tuple[Path, dict[str, Any]]] = []
    for f, art in records_module.iter_record_files(root):
        try:
            found.append((f, check_artifact_record(root, f, art)))
        except ValueError as exc:  # RecordError, or the file itself unreadable
            scan.refused.append((f, _reason(exc, f)))
    claims: dict[str, set[str]] = defaultdict(set)
    for _, rec in found:
        claims[rec["key"]].add(rec["path"])
    for f, rec in found:
        if len(claims[rec["key"]]) > 1:
            others = sorted(claims[rec["key"]] - {rec["path"]})
            scan.refused.append((f, f"artifact key {rec['key']} is also claimed by the record of {others[0]}"))
    found = [(f, r) for f, r in found if len(claims[r["key"]]) == 1]
    paths, keys = {r["path"] for _, r in found}, {r["key"] for _, r in found}
    claimed = {r["model"]["model_id"]: r["path"] for _, r in found if r.get("model")}
    # The trial is the real restore: every record that passes is kept in a scratch catalog of the same
    # schema, in the order the real restore inserts them, so a record that would break it is refused alone.
    scratch = duckdb.connect()
    try:
        migrate(scratch)
        _clear(scratch)
        expected = rows_module.root_id(root, create=os.access(root, os.W_OK))  # recovered, never minted anew
        buckets = {"model": scan.models, "run": scan.runs, "sweep": scan.sweeps, "alias": scan.aliases}
        trials: list[tuple[Path, Any]] = []
        for kind, bucket in buckets.items():
            for f in rows_module.row_record_files(root, kind):
                try:
                    rec = rows_module.load_row_record(root, f, kind, expected_root=expected, types=types)
                    if kind == "model":
                        _check_model_rows(root, rec, paths, keys, claimed)
                    _trial(scratch, lambda con, rec=rec: rows_module.restore_rows(con, rec, types))
                except UntrustedReference as exc:
                    scan.left_out.append(f"{f.relative_to(root).as_posix()}: {exc}")
                    continue
                except ValueError as exc:
                    scan.refused.append((f, _reason(exc, f)))
                    continue
                bucket.append(rec)
                trials.append((f, rec))
        journaled = {r.ident: r for r in scan.models}
        for f, rec in found:
            try:
                rec = _owned(root, rec, journaled, paths, keys)
                _trial(scratch, lambda con, rec=rec: records_module.register_records(con, root, [rec]))
            except ValueError as exc:
                scan.refused.append((f, _reason(exc, f)))
                continue
            scan.artifacts.append(rec)
            trials.append((f, rec))
        for f in _views_breakers(scratch, trials):  # e.g. more figures than the leaderboard's pivot takes
            scan.refused.append((f, "its rows do not fit the catalog: the leaderboard view cannot be built with them "
                                    "(too many distinct figures)"))
            scan.models[:] = [r for r in scan.models if r.file != f]
            scan.artifacts[:] = [r for r in scan.artifacts if r is not dict(trials).get(f)]
    finally:
        scratch.close()
    trusted_paths, trusted_keys = {r["path"] for r in scan.artifacts}, {r["key"] for r in scan.artifacts}
    for rec in list(scan.models):  # an artifact refused after its model's row record was read
        try:
            _check_model_rows(root, rec, trusted_paths, trusted_keys, claimed)
        except UntrustedReference as exc:
            scan.models.remove(rec)
            scan.left_out.append(f"{rec.file.relative_to(root).as_posix()}: {exc}")
    _drop_conflicting_model_claims(scan)
    return scan


def _reason(exc: BaseException, f: Path) -> str:
    text = " ".join(str(exc).split())
    return text.split(f"{f}: ", 1)[-1] if str(f) in text else text


def _trial(scratch: duckdb.DuckDBPyConnection, insert: Callable[[duckdb.DuckDBPyConnection], Any]) -> None:
    """Insert a record's rows into the scratch catalog (kept when they fit, rolled back when not): DuckDB's
    own types and constraints decide, and a record that fails is refused before the real catalog is touched."""
    scratch.execute("BEGIN TRANSACTION")
    try:
        insert(scratch)
    except (duckdb.Error, KeyError, TypeError, ValueError, OverflowError, ArrowException) as exc:
        scratch.execute("ROLLBACK")
        raise RecordError(f"its rows do not fit the catalog: {first_line(exc)[:200]}") from None
    scratch.execute("COMMIT")


def _views_breakers(scratch: duckdb.DuckDBPyConnection, trials: list[tuple[Path, Any]]) -> list[Path]:
    """The records whose rows keep the catalog's views from being built (the leaderboard's pivot over
    every figure): found by taking the records out, those with the most metric rows first."""
    def builds() -> bool:
        try:
            scratch.execute("BEGIN TRANSACTION")
            refresh_leaderboard_view(scratch)
            scratch.execute("SELECT count(*) FROM leaderboard").fetchall()
            return True
        except duckdb.Error:
            return False
        finally:
            scratch.execute("ROLLBACK")

    if builds():
        return []
    def n_metrics(item: tuple[Path, Any]) -> int:
        rec = item[1]
        return len(rec.tables.get("metrics", ((), ()))[1]) if isinstance(rec, rows_module.RowRecord) else len(rec.get("metrics") or [])

    breakers = []
    for f, rec in sorted(trials, key=n_metrics, reverse=True):
        if not n_metrics((f, rec)):
            break
        ids = {rec.ident} if isinstance(rec, rows_module.RowRecord) else {m["model_id"] for m in rec["metrics"]}
        scratch.execute("DELETE FROM metrics WHERE list_contains(?, model_id)", [sorted(ids)])
        breakers.append(f)
        if builds():
            return breakers
    return breakers


def _inside(root: Path, stored: str) -> str | None:
    """The root-relative path of a stored model path that lies inside ``root`` (None: an id or elsewhere)."""
    resolved = from_root(root, stored)
    if not resolved or not os.path.isabs(resolved):
        return None
    rel = to_root(root, resolved)
    return None if os.path.isabs(rel) else rel


def _check_model_rows(root: Path, rec: rows_module.RowRecord, paths: set[str], keys: set[str],
                      claimed: dict[str, str]) -> None:
    """A model row may name a path inside the root only where a trusted artifact record lies, and may
    not move a model that a trusted artifact record of this root holds out of the root."""
    cols, rows = rec.tables.get("models", ([], []))
    for row in rows:
        r = dict(zip(cols, row))
        inside = _inside(root, r.get("path") or "")
        if inside is not None and inside not in paths:
            raise UntrustedReference(f"model {rec.ident!r} names {inside}, which holds no trusted artifact record")
        if inside is None and (problem := content_id_problem(rec.ident, from_root(root, r.get("path") or ""),
                                                                recorded_content_hash(r.get("meta")))):
            raise UntrustedReference(problem)
        if inside is None and rec.ident in claimed:
            raise RecordError(f"model {rec.ident!r} is the artifact at {claimed[rec.ident]}; its row record "
                              f"names {str(r.get('path'))[:120]!r} outside the data root")
        if r.get("artifact_key") is not None and r["artifact_key"] not in keys:
            raise UntrustedReference(f"model {rec.ident!r} names artifact {r['artifact_key']}, which no trusted record holds")


def _owned(root: Path, rec: dict[str, Any], journaled: dict[str, rows_module.RowRecord], paths: set[str],
           keys: set[str]) -> dict[str, Any]:
    """``rec`` without the model and metric rows its model's row record replaces; RecordError when it
    files metrics under a model that is not this artifact's."""
    mine = {rec.get("name"), (rec.get("model") or {}).get("model_id")}
    for ident, row_rec in journaled.items():
        cols, rows = row_rec.tables.get("models", ([], []))
        if any(_inside(root, dict(zip(cols, r)).get("path") or "") == rec["path"] for r in rows):
            mine.add(ident)
    strangers = sorted({m["model_id"] for m in rec.get("metrics") or []} - mine)
    if strangers:
        raise RecordError(f"it files metrics under model {strangers[0]!r}, which is not this artifact's")
    model = rec.get("model")
    if model and model.get("artifact_key") not in (None, *keys):
        raise RecordError(f"its model row names artifact {model['artifact_key']}, which no trusted record holds")
    return {**rec, "model": None if not model or model["model_id"] in journaled else model,
            "metrics": [m for m in rec.get("metrics") or [] if m["model_id"] not in journaled] or None}


def _drop_conflicting_model_claims(scan: Scan) -> None:
    """A model id that artifact records file under different paths (and no row record settles) is left out."""
    claims: dict[str, set[str]] = defaultdict(set)
    for rec in scan.artifacts:
        if rec.get("model"):
            claims[rec["model"]["model_id"]].add(rec["path"])
    for ident, where in claims.items():
        if len(where) > 1:
            scan.left_out.append(f"model {ident!r}: records at {' and '.join(sorted(where))} both claim it")
            for i, rec in enumerate(scan.artifacts):
                if rec.get("model") and rec["model"]["model_id"] == ident:
                    scan.artifacts[i] = {**rec, "model": None}


# -- writing the catalog ----------------------------------------------------------------------------------
def _clear(con: duckdb.DuckDBPyConnection) -> None:
    """Remove every row a rebuild restores (inside the caller's transaction)."""
    for table in ("artifacts", "models", "metrics"):
        con.execute(f"DELETE FROM {table}")
    for kind in rows_module.ROW_KINDS.values():
        for table, col in kind.tables.items():
            if table not in ("models", "metrics"):
                con.execute(f"DELETE FROM {table} WHERE {col} IS NOT NULL")


def _restore(con: duckdb.DuckDBPyConnection, root: Path, scan: Scan,
             types: dict[str, dict[str, tuple[str, bool]]]) -> None:
    """Replace the rebuilt tables' rows with what ``scan`` holds (inside the caller's transaction)."""
    _clear(con)
    for rec in (*scan.models, *scan.runs, *scan.sweeps, *scan.aliases):
        rows_module.restore_rows(con, rec, types)
    records_module.register_records(con, root, scan.artifacts)
    restore_dictionaries(con, root, scan.artifacts)
    refresh_leaderboard_view(con)


def _keep_live_rows(cat: Catalog) -> None:
    """Before a rebuild over a readable catalog: write the row records of runs still running (their rows
    change), and once per data root those of every run and model (a root from before row records)."""
    with cat.connect() as con:
        lock = lambda name: artifact_lock(name, cat.root)  # noqa: E731
        if not rows_module.keep_all_once(con, cat.root, lock):
            running = "SELECT run_id FROM runs WHERE status = 'running'"
            runs = [r for (r,) in con.execute(running).fetchall()]
            models = [m for (m,) in con.execute(f"SELECT model_id FROM models WHERE run_id IN ({running}) UNION "
                                                f"SELECT model_id FROM metrics WHERE run_id IN ({running})").fetchall()]
            rows_module.keep_all(con, cat.root, "run", runs, lock)
            rows_module.keep_all(con, cat.root, "model", models, lock)


def _write_missing_records(cat: Catalog) -> int:
    """Write the record of every registered artifact inside the data root that has none (artifacts
    registered before records existed), from its catalog row, once its files are checked against the
    row's manifest; the number written."""
    n = 0
    models = {r["artifact_key"]: r for r in cat.query("SELECT * FROM models WHERE artifact_key IS NOT NULL")}
    for row in cat.query("SELECT * FROM artifacts WHERE manifest IS NOT NULL"):
        path = Path(row["path"])
        if not path.exists() or Path(cat.rel(path)).is_absolute() or records_module.record_path(path).exists():
            continue
        if full_check(path, row["manifest"]) is not None:  # changed since: its row is not vouched for
            continue
        rec = {k: row.get(k) for k in ("kind", "name", "content_hash", "code_version", "run_id", "size_bytes",
                                       "manifest_hash")}
        for col in ("input_hashes", "config", "meta", "manifest"):
            rec[col] = json.loads(row[col]) if isinstance(row.get(col), str) else row.get(col)
        model = models.get(row["artifact_key"])
        if model and cat.rel(model["path"]) != cat.rel(path):  # a row naming another folder (PST's result)
            model = None
        if model:
            model = {**model, "path": cat.rel(model["path"]),
                     "meta": json.loads(model["meta"]) if isinstance(model.get("meta"), str) else model.get("meta")}
            model.pop("created_at", None)
        rec.update(format=records_module.RECORD_FORMAT, key=row["artifact_key"], path=cat.rel(path), model=model,
                   metrics=None, created_at=str(row["created_at"]) if row.get("created_at") else None)
        records_module.write_record(path, json.loads(json.dumps(rec, default=str)))
        n += 1
    return n
