"""Explicit pyarrow schemas of the dictionary artifact's Parquet files."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["DEFINITIONS_SCHEMA", "EXAMPLES_SCHEMA", "QUARANTINE_SCHEMA"]

DEFINITIONS_SCHEMA = pa.schema([
    pa.field("def_id", pa.int64(), nullable=False),  # row number in the artifact, stable for a key
    pa.field("entry", pa.string(), nullable=False),
    pa.field("definition", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),  # train | dev | test
    pa.field("pos", pa.string()),
    pa.field("synset", pa.string()),
    pa.field("sources", pa.list_(pa.string()), nullable=False),  # every source that gave this definition
    pa.field("meta", pa.string()),  # JSON object: a reader's extra fields, or null
])

EXAMPLES_SCHEMA = pa.schema([
    pa.field("def_id", pa.int64(), nullable=False),
    pa.field("entry", pa.string(), nullable=False),
    pa.field("example", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
])

QUARANTINE_SCHEMA = pa.schema([
    pa.field("source", pa.string(), nullable=False),
    pa.field("file", pa.string(), nullable=False),
    pa.field("line", pa.int64(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("detail", pa.string()),
    pa.field("raw", pa.string()),
])
