"""Rebuilding the catalog from the artifact records on disk (``defsentflow catalog rebuild``), and
healing a lost or emptied catalog when a run starts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import defsentflow.storage.records as records_module
from defsentflow.storage.catalog import Catalog, CatalogError
from defsentflow.storage.paths import data_root

__all__ = ["rebuild_catalog", "heal_catalog"]


def rebuild_catalog(root: str | os.PathLike | None = None) -> dict[str, int]:
    """Register every record under the data root in its catalog, in one transaction:
    ``{"records", "artifacts", "models", "metrics"}`` (catalog rows after rebuilding, plus
    ``"corrupt_moved": 1`` when a corrupt catalog was kept aside as ``catalog.duckdb.corrupt-<time>``,
    ``"records_written"`` for artifacts registered before records existed, written from their rows).

    A missing catalog is created. Idempotent: a rebuild of a complete catalog changes nothing.
    """
    root = data_root(root, create=False)
    if not root.is_dir():
        raise ValueError(f"no data root at {root}")
    cat = Catalog(root)
    moved = written = 0
    if cat.path.is_file():
        try:
            cat.query("SELECT 1")
        except CatalogError:  # corrupt: kept for inspection, never deleted
            os.replace(cat.path, cat.path.with_name(f"catalog.duckdb.corrupt-{time.strftime('%Y%m%dT%H%M%S')}"))
            moved = 1
        else:  # artifacts registered before records existed get theirs now
            written = _write_missing_records(cat)
    records = [rec for _, rec in records_module.iter_records(root)]
    cat.register_records(records)
    counts = {"records": len(records)}
    for table in ("artifacts", "models", "metrics"):
        counts[table] = cat.query(f"SELECT count(*) AS n FROM {table}")[0]["n"]
    if moved:
        counts["corrupt_moved"] = moved
    elif written:
        counts["records_written"] = written
    return counts


def _write_missing_records(cat: Catalog) -> int:
    """Write the record of every registered artifact inside the data root that has none (artifacts
    registered before records existed), from its catalog row; the number written."""
    n = 0
    models = {r["artifact_key"]: r for r in cat.query("SELECT * FROM models WHERE artifact_key IS NOT NULL")}
    for row in cat.query("SELECT * FROM artifacts WHERE manifest IS NOT NULL"):
        path = Path(row["path"])
        if not path.exists() or Path(cat.rel(path)).is_absolute() or records_module.record_path(path).exists():
            continue
        rec = {k: row.get(k) for k in ("kind", "name", "content_hash", "code_version", "run_id", "size_bytes",
                                       "manifest_hash")}
        for col in ("input_hashes", "config", "meta", "manifest"):
            rec[col] = json.loads(row[col]) if isinstance(row.get(col), str) else row.get(col)
        model = models.get(row["artifact_key"])
        if model:
            model = {**model, "meta": json.loads(model["meta"]) if isinstance(model.get("meta"), str) else model.get("meta")}
            model.pop("created_at", None)
        rec.update(format=records_module.RECORD_FORMAT, key=row["artifact_key"], path=cat.rel(path), model=model,
                   metrics=None, created_at=str(row["created_at"]) if row.get("created_at") else None)
        records_module.write_record(path, json.loads(json.dumps(rec, default=str)))
        n += 1
    return n


def heal_catalog(root: str | os.PathLike | None = None) -> dict[str, int] | None:
    """Rebuild a missing or emptied catalog from the records under the data root (what a run does
    when it starts); None when the catalog has artifacts already or there are no records."""
    root = data_root(root)
    if (root / "catalog.duckdb").exists() and Catalog(root).query("SELECT count(*) AS n FROM artifacts")[0]["n"]:
        return None
    if next(records_module.iter_records(root), None) is None:
        return None
    return rebuild_catalog(root)
