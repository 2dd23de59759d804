"""A dictionary dataset as one Arrow table, and the content hash every consumer keys it by.

Training (:mod:`defsentflow.training.data`), evaluation (reverse dictionary, word prediction) and
serving (:mod:`defsentflow.revdict.index`) read dictionaries through these two functions, so a
dataset named in a config is loaded and identified the same way everywhere.

Example:
    >>> table = load_dictionary_table("oewn")
    >>> dictionary_content_hash(table)[:8]
"""

from __future__ import annotations

import hashlib
import os

import pyarrow as pa

from defsentflow.dictionary.store import load_dictionary, read_summary, resolve_dictionary

__all__ = ["dictionary_content_hash", "dictionary_variant", "load_dictionary_table"]


def load_dictionary_table(dictionary: str | pa.Table, *, root: str | os.PathLike | None = None) -> pa.Table:
    """A dictionary dataset by name or artifact key (``defsentflow.dictionary``), or a table as is.

    Raises:
        KeyError: no dataset of that name or key in the catalog (ingest it first).
    """
    if isinstance(dictionary, pa.Table):
        return dictionary

    return load_dictionary(dictionary, root=root)


def dictionary_content_hash(table: pa.Table) -> str:
    """Hash of the (entry, definition, split) content of a dictionary table, row order included."""
    h = hashlib.blake2b(digest_size=16)
    cols = [table.column(c).to_pylist() for c in ("entry", "definition", "split") if c in table.column_names]
    for row in zip(*cols):
        h.update("\x1f".join("" if v is None else str(v) for v in row).encode())
        h.update(b"\x1e")
    return h.hexdigest()


def dictionary_variant(dictionary: str | pa.Table, *, root: str | os.PathLike | None = None) -> str | None:
    """The dataset variant (``a``/``b``/``c``) a dictionary was ingested as; None for a bare table."""
    if isinstance(dictionary, pa.Table):
        return None

    try:
        _, path = resolve_dictionary(dictionary, root)
    except KeyError:  # a table served by other means (tests, a caller's loader): variant unknown
        return None
    return (read_summary(path) or {}).get("variant")
