"""Explicit pyarrow schemas of the corpus artifact's tables."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["SENTENCES_SCHEMA", "CHUNKS_SCHEMA", "QUARANTINE_SCHEMA"]

SENTENCES_SCHEMA = pa.schema(
    [
        pa.field("sentence_id", pa.int64(), nullable=False),  # global, dense 0..N-1 in document order
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("para_idx", pa.int32(), nullable=False),  # paragraph position in its document
        pa.field("sent_idx", pa.int32(), nullable=False),  # sentence position in its document
        pa.field("text", pa.string(), nullable=False),
    ]
)

CHUNKS_SCHEMA = pa.schema(
    [
        pa.field("chunk_id", pa.int64(), nullable=False),  # dense 0..M-1; retrieval ids index this
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("first_sentence_id", pa.int64(), nullable=False),
        pa.field("last_sentence_id", pa.int64(), nullable=False),  # inclusive
        pa.field("text", pa.string(), nullable=False),
    ]
)

# Same columns as the catalog's ``quarantine`` table, less ``dataset``/``source``/``created_at``,
# which the catalog adds when the rows are registered.
QUARANTINE_SCHEMA = pa.schema(
    [
        pa.field("file", pa.string()),
        pa.field("line", pa.int64()),
        pa.field("reason", pa.string()),
        pa.field("raw", pa.string()),
        pa.field("rejected", pa.bool_()),  # False: a repaired line whose document was kept
    ]
)
