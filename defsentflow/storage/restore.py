"""What a rebuild restores beyond the records' own rows: a dataset's rows from its dictionary
artifact, and records moved to quarantine whose artifact is whole again.

A dictionary artifact (``parquet/dictionaries/<name>/<key>/``) holds its definitions, examples,
quarantined lines and ``summary.json``; once its record is trusted (its files re-hashed), its
``dictionaries``, ``definitions``, ``examples`` and ``quarantine`` rows are loaded from those files,
exactly as an ingest registers them (:func:`dictionary_rows`, which the ingest calls too).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

import defsentflow.storage.row_records as rows_module
from defsentflow.limits import LIMITS
from defsentflow.storage.bounded_json import read_json_file
from defsentflow.storage.paths import OutsideRootError, inside_root, place_folder, root_path
from defsentflow.storage.record_checks import QUARANTINE_DIR, check_artifact_record
from defsentflow.storage.records import artifact_of

__all__ = ["DICTIONARY_FILES", "dictionary_rows", "restore_dictionaries", "return_quarantined"]

log = logging.getLogger(__name__)

DICTIONARY_FILES = ("definitions.parquet", "examples.parquet", "quarantine.parquet")
_CORPUS_SOURCE = "corpus"  # the quarantine table is shared with the corpus stage, which files its rows so


def dictionary_rows(con: duckdb.DuckDBPyConnection, name: str, key: str, path: str | os.PathLike,
                    summary: Mapping[str, Any], updated_at: str | None = None) -> None:
    """Replace dataset ``name``'s rows (``definitions``, ``examples``, its ``quarantine`` rows and its
    ``dictionaries`` row) with those of the artifact at ``path`` (inside the caller's transaction);
    ``updated_at``: when it was registered (default: now)."""
    defs, exs, quar = (str(Path(path) / f) for f in DICTIONARY_FILES)
    splits = summary["splits"]
    con.execute("DELETE FROM definitions WHERE dataset = ?", [name])
    con.execute("INSERT INTO definitions (dataset, def_id, entry, definition, split, pos, synset, sources, meta) "
                "SELECT ?, def_id, entry, definition, split, pos, synset, sources, meta FROM read_parquet(?)", [name, defs])
    con.execute("DELETE FROM examples WHERE dataset = ?", [name])
    con.execute("INSERT INTO examples (dataset, def_id, entry, example, split) "
                "SELECT ?, def_id, entry, example, split FROM read_parquet(?)", [name, exs])
    con.execute("DELETE FROM quarantine WHERE dataset = ? AND source <> ?", [name, _CORPUS_SOURCE])
    con.execute("INSERT INTO quarantine (dataset, source, file, line, reason, detail, raw) "
                "SELECT ?, source, file, line, reason, detail, raw FROM read_parquet(?)", [name, quar])
    con.execute(
        "INSERT OR REPLACE INTO dictionaries (name, variant, artifact_key, sources, tokenizer, seed, case_fold, "
        "entries, definitions, examples, quarantined, train, dev, test, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(CAST(? AS TIMESTAMP), current_timestamp))",
        [name, summary["variant"], key, json.dumps(summary["sources"]), summary.get("tokenizer"), summary["seed"],
         summary["case_fold"], summary["entries"], summary["definitions"], summary["examples"], summary["quarantined"],
         splits["train"]["definitions"], splits["dev"]["definitions"], splits["test"]["definitions"], updated_at],
    )


def restore_dictionaries(con: duckdb.DuckDBPyConnection, root: Path, artifacts: Sequence[Mapping[str, Any]]) -> int:
    """The rows of each dataset from its newest trusted dictionary artifact (records already checked,
    files re-hashed); the number of datasets. A summary that does not fit is a warning, that dataset
    is left for the next ingest."""
    newest: dict[str, Mapping[str, Any]] = {}
    for rec in artifacts:
        if rec.get("kind") == "dictionary" and rec.get("name"):
            old = newest.get(rec["name"])
            if old is None or str(rec.get("created_at") or "") >= str(old.get("created_at") or ""):
                newest[rec["name"]] = rec
    con.execute("DELETE FROM dictionaries")
    n = 0
    for name, rec in sorted(newest.items()):
        try:
            path = inside_root(root, rec["path"])
            summary = read_json_file(path / "summary.json", max_bytes=LIMITS["record_bytes"], what="dictionary summary")
            dictionary_rows(con, name, rec["key"], path, summary, rec.get("created_at"))  # registered then
            n += 1
        except (ValueError, KeyError, TypeError, OSError, duckdb.Error) as exc:
            log.warning("dictionary %s: its rows were not restored (%s); `defsentflow ingest` registers them again",
                        name, str(exc).splitlines()[0][:200])
    return n


def return_quarantined(root: Path, types: dict[str, dict[str, tuple[str, bool]]]) -> list[str]:
    """Move back each quarantined record that passes every check now (its artifact whole again, the
    reason it was refused gone) to where it was, when nothing lies there now; the paths returned."""
    try:
        folder = root_path(root, *QUARANTINE_DIR)
    except OutsideRootError:
        return []
    if not folder.is_dir():
        return []
    expected = rows_module.root_id(root, create=False)
    back = []
    for q in sorted(folder.glob("*.quarantined")):
        why = q.with_name(q.name + ".reason.txt")
        try:
            rel = why.read_text(encoding="utf-8").split(": ", 1)[0]
            original = inside_root(root, rel)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if original.exists() or original.is_symlink() or q.is_symlink():
            continue
        parts = Path(rel).parts
        try:
            if parts[0] == rows_module.RECORDS_DIR:
                kind = next((k for k, spec in rows_module.ROW_KINDS.items()
                             if parts[:2] == tuple(place_folder(spec.place).split("/"))), None)
                if kind is None:
                    continue
                rows_module.load_row_record(root, q, kind, expected_root=expected, types=types, named=original)
            else:
                artifact = artifact_of(original)
                if not (artifact.exists() and artifact.parent.is_dir()):
                    continue
                check_artifact_record(root, q, artifact)
        except ValueError:
            continue
        try:
            os.replace(q, original)
            why.unlink(missing_ok=True)
        except OSError:
            continue
        back.append(rel)
        log.warning("record %s returned from quarantine: it passes every check again", rel)
    return back
