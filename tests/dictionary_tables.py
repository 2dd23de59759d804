"""Register a small, already split (entry, definition, split) table as a dataset of the data root.

Training reads its definitions by reference (a dictionary artifact's folder), on whatever process
trains, so a test dictionary must be a real artifact, not a table served by a monkeypatch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.dictionary.schemas import DEFINITIONS_SCHEMA, EXAMPLES_SCHEMA, QUARANTINE_SCHEMA
from defsentflow.dictionary.store import FILES, dictionary_dir, register_artifact, seal_artifact
from defsentflow.storage import atomic_dir, hash_text


def register_table(name: str, table: pa.Table, root: str | Path | None = None) -> Path:
    """Write ``table`` (columns entry, definition, split) as dataset ``name`` and register it."""
    n = table.num_rows
    key = hash_text(name + json.dumps(table.select(["entry", "definition", "split"]).to_pydict(), sort_keys=True))[:32]
    defs = pa.table({"def_id": pa.array(range(n), pa.int64()), "entry": table.column("entry"),
                     "definition": table.column("definition"), "split": table.column("split"),
                     "pos": pa.nulls(n, pa.string()), "synset": pa.nulls(n, pa.string()),
                     "sources": pa.array([["test"]] * n, pa.list_(pa.string())), "meta": pa.nulls(n, pa.string())},
                    schema=DEFINITIONS_SCHEMA)
    splits = table.column("split").to_pylist()
    entries = len(set(table.column("entry").to_pylist()))
    summary = {"key": key, "variant": "a", "sources": ["test"], "tokenizer": None, "seed": 0, "case_fold": False,
               "entries": entries, "definitions": n, "examples": 0, "quarantined": 0, "read": n, "accepted": n,
               "duplicates": 0, "excluded": 0, "examples_quarantined": 0, "reasons": {}, "seconds": 0.0,
               "splits": {s: {"definitions": splits.count(s)} for s in ("train", "dev", "test")}}
    final = dictionary_dir(name, key, root)
    if not final.is_dir():
        with atomic_dir(final) as tmp:
            for file, t in zip(FILES, (defs, EXAMPLES_SCHEMA.empty_table(), QUARANTINE_SCHEMA.empty_table()),
                               strict=True):
                pq.write_table(t, tmp / file)
            summary = seal_artifact(tmp, summary)
    else:
        summary = json.loads((final / "summary.json").read_text())
    register_artifact(name, final, summary, input_hashes={"table": key}, config={"test_table": name}, root=root)
    return final
