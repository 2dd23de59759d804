"""On-disk artifact records: what the catalog knows about an artifact, kept beside its files.

Every registered artifact has a record file next to it (inside a directory artifact, beside a file
artifact) holding its registration row: key, kind, name, its path relative to the data root,
content hash, inputs, config, its manifest, and optionally the model row and metrics it adds.
The record is written last and atomically, after the artifact's files. So:

- a lost, deleted or emptied catalog is rebuilt from the records
  (:func:`~defsentflow.storage.rebuild.rebuild_catalog`, ``defsentflow catalog rebuild``, and
  automatically when a run starts: :func:`~defsentflow.storage.rebuild.heal_catalog`);
- a worker process that must not open the catalog (``DEFSENTFLOW_WORKER=1``) writes a record
  with :func:`make_record` and :func:`write_record`; the flow process registers the records in one
  transaction (:meth:`Catalog.register_records`).

Example:
    >>> rec = make_record(root, key=key, kind="model", path=model_dir, content_hash=hash_path(model_dir))
    >>> write_record(model_dir, rec)
    >>> Catalog(root).register_records([read_record(model_dir)])
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from defsentflow.limits import LIMITS
from defsentflow.storage.atomic import TMP_PREFIX, atomic_path
from defsentflow.storage.bounded_json import read_json_file
from defsentflow.storage.hashing import code_version
from defsentflow.storage.manifest import artifact_manifest, manifest_hash, quick_check
from defsentflow.storage.paths import RECORD_NAME, place_folder, relative_tree, to_root
from defsentflow.storage.record_checks import ArtifactRecord, first_error
from defsentflow.storage.row_records import insert_rows

__all__ = ["RECORD_NAME", "RECORD_FORMAT", "record_path", "make_record", "write_record", "read_record",
           "iter_record_files", "register_records", "amend_record", "settle_record", "write_model_row", "artifact_of"]

RECORD_FORMAT = 1
_FILE_SUFFIX = ".defsentflow-record.json"
_NOT_SCANNED = tuple(place_folder(p) for p in ("records", "quarantine", "prefect"))  # row records, records moved aside, Prefect's own files


def record_path(artifact_path: str | os.PathLike) -> Path:
    """Where the record of ``artifact_path`` lives: ``<dir>/.defsentflow-record.json`` for a
    directory, ``<parent>/.<name>.defsentflow-record.json`` for a file (hidden names: manifests
    and content hashes skip hidden files, so a record never changes its artifact's hash)."""
    p = Path(artifact_path)
    if p.is_dir():
        return p / RECORD_NAME
    return p.with_name(f".{p.name}{_FILE_SUFFIX}")


def artifact_of(record_file: Path) -> Path:
    """The artifact a record file describes (the folder it lies in, or the file it is named after)."""
    if record_file.name == RECORD_NAME:
        return record_file.parent
    return record_file.with_name(record_file.name[1:-len(_FILE_SUFFIX)])


def make_record(root: str | os.PathLike, *, key: str, kind: str, path: str | os.PathLike, content_hash: str,
                name: str | None = None, input_hashes: Mapping[str, str] | None = None, config: Any = None,
                run_id: str | None = None, meta: Any = None, model: Mapping[str, Any] | None = None,
                metrics: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The record of a complete artifact (its manifest is computed here, in the calling process).

    ``model`` holds :meth:`Catalog.register_model`'s arguments (``model_id``, ``path``, ``base_model``,
    ``method``, ``pooling``, ``artifact_key``, ``meta``); ``metrics`` holds rows as
    :meth:`Catalog.record_metrics` takes them, each with its ``model_id``. Opens no catalog.
    """
    root = Path(root)
    manifest = artifact_manifest(path)
    model_row = None
    if model is not None:
        model_row = dict(model)
        model_row["path"] = to_root(root, model_row.get("path", path))
        model_row.setdefault("run_id", run_id)
        model_row.setdefault("artifact_key", key)
    return {
        "format": RECORD_FORMAT, "key": key, "kind": kind, "name": name, "path": to_root(root, path),
        "content_hash": content_hash, "input_hashes": dict(input_hashes) if input_hashes else None,
        "config": relative_tree(root, json.loads(json.dumps(config, default=str))) if config is not None else None,
        "code_version": code_version(), "run_id": run_id,
        "meta": relative_tree(root, json.loads(json.dumps(meta, default=str))) if meta is not None else None,
        "size_bytes": sum(f["size"] for f in manifest.values()), "manifest": manifest,
        "manifest_hash": manifest_hash(manifest),
        "model": model_row, "metrics": [dict(m) for m in metrics] if metrics else None,
        "created_at": datetime.datetime.now().isoformat(sep=" "),  # local time, as the catalog's current_timestamp
    }


def write_record(artifact_path: str | os.PathLike, record: Mapping[str, Any]) -> Path:
    """Write ``record`` beside ``artifact_path`` atomically (temporary file, fsync, rename).
    Call it LAST, once every file of the artifact is in place."""
    final = record_path(artifact_path)
    with atomic_path(final) as tmp:
        tmp.write_text(json.dumps(record, sort_keys=True, default=str))
    return final


def settle_record(artifact_path: str | os.PathLike, record: Mapping[str, Any], *, tries: int = 5) -> dict[str, Any]:
    """Write ``record`` beside ``artifact_path``, then check that the record on disk describes the files
    on disk; when another process replaced them meanwhile (two runs writing the same artifact), the
    manifest is taken again and the record rewritten, until they agree. The record as written last."""
    rec = dict(record)
    for _ in range(tries):
        write_record(artifact_path, rec)
        try:
            on_disk = read_record(artifact_path)
        except ValueError:
            on_disk = None
        if on_disk is not None and on_disk.get("manifest") and quick_check(artifact_path, on_disk["manifest"]) is None:
            return rec if on_disk.get("manifest_hash") == rec.get("manifest_hash") else on_disk
        manifest = artifact_manifest(artifact_path)
        rec.update(manifest=manifest, manifest_hash=manifest_hash(manifest),
                   size_bytes=sum(f["size"] for f in manifest.values()))
    return rec


def _load(record_file: Path) -> dict[str, Any]:
    """The record in ``record_file``, checked against the record schema (types and sizes; where it
    lies and its content are checked by :func:`~defsentflow.storage.record_checks.check_artifact_record`)."""
    data = read_json_file(record_file, max_bytes=LIMITS["record_bytes"], what="artifact record")
    try:
        ArtifactRecord.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{record_file}: not an artifact record ({first_error(exc)})") from None
    return data


def read_record(artifact_path: str | os.PathLike) -> dict[str, Any] | None:
    """The record beside ``artifact_path``; None if there is none.

    Raises:
        ValueError: the record exists but is corrupt (one line naming the file).
    """
    f = record_path(artifact_path)
    if not f.is_file():
        return None
    return _load(f)


def iter_record_files(root: str | os.PathLike) -> Iterator[tuple[Path, Path]]:
    """``(record file, artifact path)`` of every artifact record under the data root, in path order;
    nothing is read. Records inside temporaries (``.tmp-*``), artifacts moved aside (``.changed-*``),
    the row records and quarantine folders, and records whose artifact is gone are skipped."""
    root = Path(root)
    found = sorted(set(root.rglob(RECORD_NAME)) | set(root.rglob(f".*{_FILE_SUFFIX}")))
    for f in found:
        rel = f.relative_to(root).parts[:-1]
        if any(part.startswith((TMP_PREFIX, ".changed-")) for part in rel) or (rel and rel[0] in _NOT_SCANNED):
            continue
        if f.name != RECORD_NAME and f.name.startswith(TMP_PREFIX):
            continue
        art = artifact_of(f)
        if art.exists() or art.is_symlink():
            yield f, art


def register_records(con: Any, root: str | os.PathLike, records: Sequence[Mapping[str, Any]]) -> int:
    """Insert the rows of ``records`` on ``con`` (inside the caller's transaction); the number of
    records. Idempotent: the rows are keyed (artifact key, model id, metric key) and replaced by
    identical ones, so registering a record twice leaves no duplicate and changes nothing."""
    for rec in records:
        path = to_root(root, rec["path"])
        man = rec.get("manifest")
        con.execute(
            "INSERT OR REPLACE INTO artifacts (artifact_key, kind, name, path, content_hash, input_hashes, config, "
            "code_version, run_id, meta, size_bytes, manifest, manifest_hash, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(CAST(? AS TIMESTAMP), current_timestamp))",
            [rec["key"], rec["kind"], rec.get("name"), path, rec["content_hash"], _json(rec.get("input_hashes")),
             _json(rec.get("config")), rec.get("code_version"), rec.get("run_id"), _json(rec.get("meta")),
             rec.get("size_bytes"), _json(man), rec.get("manifest_hash"), rec.get("created_at")],
        )
        model = rec.get("model")
        if model:
            write_model_row(con, root, {**model, "path": model.get("path") or rec["path"],
                                        "artifact_key": model.get("artifact_key") or rec["key"]})
        if rec.get("metrics"):
            _replace_metrics(con, rec["metrics"], rec.get("run_id"))
    return len(records)


_METRIC_COLUMNS = ("model_id", "task", "setting", "metric", "value", "n", "n_excluded", "pooling", "run_id")


def _replace_metrics(con: Any, metrics: Sequence[Mapping[str, Any]], run_id: str | None) -> None:
    """Replace the metric rows of the same (model, task, setting, metric, pooling) keys, in two statements
    whatever their number (a statement per row made a record of 20,000 metrics take minutes)."""
    rows = {}
    for r in metrics:
        key = (r["model_id"], r["task"], r["setting"], r["metric"], r.get("pooling") or "")
        rows[key] = [r["model_id"], r["task"], r["setting"], r["metric"], float(r["value"]), r.get("n"),
                     r.get("n_excluded"), r.get("pooling"), r.get("run_id", run_id)]
    types = {c: ("DOUBLE" if c == "value" else "BIGINT" if c in ("n", "n_excluded") else "VARCHAR", True)
             for c in _METRIC_COLUMNS}
    con.register("_metric_keys", pa.table({c: pa.array([k[i] for k in rows], pa.string())
                                            for i, c in enumerate(("model_id", "task", "setting", "metric", "pooling"))}))
    try:
        con.execute("DELETE FROM metrics USING _metric_keys AS k WHERE metrics.model_id = k.model_id AND "
                    "metrics.task = k.task AND metrics.setting = k.setting AND metrics.metric = k.metric AND "
                    "coalesce(metrics.pooling, '') = k.pooling")
    finally:
        con.unregister("_metric_keys")
    insert_rows(con, "metrics", _METRIC_COLUMNS, list(rows.values()), types)


def write_model_row(con: Any, root: str | os.PathLike, model: Mapping[str, Any]) -> None:
    """The one writer of a ``models`` row (and of the names it is known by, ``model_names``), on ``con``
    inside the caller's transaction: :meth:`Catalog.register_model`, a registered artifact record
    and an evaluation of a model the catalog does not know all file a model here. The caller mirrors
    the rows to the model's row record (``Catalog._keep_on(con, "model", [model_id])``).

    ``model``: ``model_id`` (:mod:`defsentflow.model.ids`), ``path`` (a folder in the root, stored
    root-relative; a model made elsewhere by the name a user passes, never a path into a virtual
    environment), ``base_model``, ``method``, ``pooling``, ``run_id``, ``artifact_key``, ``meta``, and
    ``names``: ``[(name, kind)]`` (PST's ``pst-<run>``, kind ``run``) that stand for it. ``keep``: a
    row already filed under the id keeps its fields (an evaluation files scores, not the model).
    """
    model_id = model["model_id"]
    path = model["path"]
    if not Path(str(path)).is_absolute() and Path(str(path)).is_dir():
        path = Path(path).resolve()  # a folder given relative to the current directory: stored where it is
    verb = "INSERT OR IGNORE" if model.get("keep") else "INSERT OR REPLACE"
    con.execute(
        f"{verb} INTO models (model_id, path, base_model, method, pooling, run_id, artifact_key, meta) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [model_id, to_root(root, path), model.get("base_model"), model.get("method"), model.get("pooling"),
         model.get("run_id"), model.get("artifact_key"), _json(model.get("meta"))])
    for name, kind in model.get("names") or ():
        if name == model_id:
            continue
        taken = con.execute("SELECT 1 FROM models WHERE model_id = ?", [name]).fetchone()
        if taken:  # a model's own id is never an alias of another
            raise ValueError(f"name {name!r} is the id of another model: it cannot also name {model_id!r}")
        con.execute("INSERT OR REPLACE INTO model_names (name, model_id, kind, run_id) VALUES (?, ?, ?, ?)",
                    [name, model_id, kind, model.get("run_id")])


def amend_record(root: str | os.PathLike, artifact_path: str | os.PathLike, *, model: Mapping[str, Any] | None = None,
                 metrics: Sequence[Mapping[str, Any]] | None = None) -> bool:
    """Add a model row or metrics to the record of the artifact at ``artifact_path`` (a registered
    model directory under the data root), so that a rebuilt catalog has them too. False (nothing
    written) when the path has no record, e.g. a base model outside the data root."""
    p = Path(str(artifact_path))
    if not p.is_absolute() or not p.exists() or Path(to_root(root, p)).is_absolute():
        return False  # not a path, gone, or outside the data root (never written to)
    try:
        rec = read_record(p)
    except ValueError:
        return False
    if rec is None:
        return False
    if model is not None:
        row = json.loads(json.dumps(dict(model), default=str))
        row["path"] = to_root(root, row.get("path") or p)
        rec["model"] = row
    if metrics:
        def mkey(m: Mapping[str, Any]) -> tuple:
            return (m["model_id"], m["task"], m["setting"], m["metric"], m.get("pooling") or "")

        merged = {mkey(m): m for m in rec.get("metrics") or []}
        merged.update({mkey(m): json.loads(json.dumps(dict(m), default=str)) for m in metrics})
        rec["metrics"] = list(merged.values())
    write_record(p, rec)
    return True


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, default=str)

