"""Dictionary artifacts on disk and in the catalog: write, register, find, load.

Layout: ``<data root>/parquet/dictionaries/<name>/<key>/`` holding ``definitions.parquet``,
``examples.parquet``, ``quarantine.parquet`` and ``summary.json``, written as one directory
that is renamed into place. Registration is one catalog transaction: the artifact row, the
dataset's rows in ``definitions``/``examples``/``quarantine`` (replacing the previous ones of
that name), its ``dictionaries`` row and an ``ingest_summaries`` row.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.dictionary.records import SPLITS, check_choice
from defsentflow.storage import Catalog, check_identifier, combine_hashes, data_root, hash_file, root_place
from defsentflow.storage.restore import DICTIONARY_FILES, dictionary_rows

__all__ = [
    "FILES",
    "dictionary_dir",
    "seal_artifact",
    "read_summary",
    "load_dictionary_folder",
    "registered_key",
    "register_artifact",
    "resolve_dictionary",
    "load_dictionary",
    "load_examples",
]

FILES = DICTIONARY_FILES
SUMMARY = "summary.json"


def dictionary_dir(name: str, key: str, root: str | os.PathLike | None = None) -> Path:
    return root_place(data_root(root), "dictionaries", check_identifier(name, "dataset name"), key)


def seal_artifact(tmp: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """Add the content hash of the Parquet files in ``tmp`` to ``summary``, write ``summary.json``
    and sync everything to disk (before the caller renames ``tmp`` into place); return the summary."""
    summary = {**summary, "content_hash": combine_hashes(hash_file(tmp / f) for f in FILES)}
    (tmp / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True))
    for f in (*FILES, SUMMARY):  # on disk before the rename makes the directory visible
        with open(tmp / f, "rb") as fh:
            os.fsync(fh.fileno())
    return summary


def files_match_summary(path: str | os.PathLike, summary: dict[str, Any]) -> bool:
    """Whether the Parquet files under ``path`` are the ones ``summary`` (its content hash) describes."""
    return combine_hashes(hash_file(Path(path) / f) for f in FILES) == summary.get("content_hash")


def read_summary(path: str | os.PathLike) -> dict[str, Any] | None:
    """The summary of a complete artifact directory, or None if it is not there."""
    p = Path(path)
    if not all((p / f).is_file() for f in (*FILES, SUMMARY)):
        return None
    return json.loads((p / SUMMARY).read_text())


def registered_key(name: str, root: str | os.PathLike | None = None) -> str | None:
    """The artifact key dataset ``name`` is registered with, if its files are complete."""
    cat = Catalog(root)
    if not cat.path.exists():
        return None
    try:
        rows = cat.query("SELECT d.artifact_key, a.path FROM dictionaries d JOIN artifacts a USING (artifact_key) "
                         "WHERE d.name = ?", [name])
    except duckdb.CatalogException:  # a catalog made before sql/010_dictionaries.sql (commit 3f8185d)
        return None
    if not rows or read_summary(rows[0]["path"]) is None:
        return None
    return rows[0]["artifact_key"]


def register_artifact(name: str, path: Path, summary: dict[str, Any], *, input_hashes: dict[str, str],
                      config: dict[str, Any], root: str | os.PathLike | None = None, status: str = "built") -> None:
    """Register a written artifact under dataset ``name``, all in one transaction."""
    cat = Catalog(root)
    key = summary["key"]
    with cat.transaction() as con:
        cat.register_artifact(key, "dictionary", path, summary["content_hash"], name=name, input_hashes=input_hashes,
                              config=config, meta={k: summary[k] for k in ("entries", "definitions", "examples")}, con=con)
        dictionary_rows(con, name, key, path, summary)  # the same rows a catalog rebuild restores
        con.execute(
            "INSERT INTO ingest_summaries (dataset, artifact_key, status, read, accepted, duplicates, excluded, quarantined, "
            "examples_quarantined, entries, definitions, examples, sources, reasons, seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [name, key, status, summary["read"], summary["accepted"], summary["duplicates"], summary["excluded"],
             summary["quarantined"], summary["examples_quarantined"], summary["entries"], summary["definitions"],
             summary["examples"], json.dumps(summary["sources"]), json.dumps(summary["reasons"]), summary["seconds"]],
        )


def resolve_dictionary(name_or_key: str, root: str | os.PathLike | None = None) -> tuple[str, Path]:
    """``(artifact key, directory)`` of a dataset name or an artifact key.

    Raises:
        KeyError: no such dataset or dictionary artifact (or its files are gone).
    """
    cat = Catalog(root)
    if not cat.path.exists():
        raise KeyError(f"no dictionary dataset or artifact {name_or_key!r} in {cat.path}")
    with cat.session(read_only=True):  # one open of the catalog file for both reads
        try:
            rows = cat.query(
                "SELECT a.artifact_key, a.path FROM artifacts a LEFT JOIN dictionaries d USING (artifact_key) "
                "WHERE a.kind = 'dictionary' AND (d.name = ? OR a.artifact_key = ?) "
                "ORDER BY (d.name = ?) DESC NULLS LAST LIMIT 1", [name_or_key, name_or_key, name_or_key])
        except duckdb.CatalogException:
            rows = []
        if not rows:
            raise KeyError(f"no dictionary dataset or artifact {name_or_key!r} in {cat.path}")
        path = Path(rows[0]["path"])
        if read_summary(path) is None or cat.artifact(rows[0]["artifact_key"]) is None:
            raise KeyError(f"dictionary {name_or_key!r}: artifact files under {path} are missing or changed; "
                           "ingest it again")
    return rows[0]["artifact_key"], path


def _load(name_or_key: str, file: str, split: str | None, root: str | os.PathLike | None) -> pa.Table:
    if split is not None:
        check_choice(split, SPLITS, "split")
    _, path = resolve_dictionary(name_or_key, root)
    filters = [("split", "=", split)] if split is not None else None
    return pq.read_table(path / file, filters=filters)


def load_dictionary_folder(path: str | os.PathLike, split: str | None = None) -> pa.Table:
    """The definitions of the dictionary artifact in folder ``path``, without the catalog (what a
    worker reads: the flow process resolved the name)."""
    if split is not None:
        check_choice(split, SPLITS, "split")
    file = Path(path) / "definitions.parquet"
    if not file.is_file():
        raise FileNotFoundError(f"{path}: not a dictionary artifact (no definitions.parquet)")
    return pq.read_table(file, filters=[("split", "=", split)] if split is not None else None)


def load_dictionary(name_or_key: str, split: str | None = None, *, root: str | os.PathLike | None = None) -> pa.Table:
    """The definitions of a dataset (by name) or artifact (by key), optionally one split.

    Example:
        >>> train = load_dictionary("oewn", split="train")
        >>> train.column_names
        ['def_id', 'entry', 'definition', 'split', 'pos', 'synset', 'sources', 'meta']
    """
    return _load(name_or_key, "definitions.parquet", split, root)


def load_examples(name_or_key: str, split: str | None = None, *, root: str | os.PathLike | None = None) -> pa.Table:
    """The usage examples of a dataset (``def_id`` refers to :func:`load_dictionary`'s rows)."""
    return _load(name_or_key, "examples.parquet", split, root)
