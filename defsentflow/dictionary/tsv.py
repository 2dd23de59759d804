"""Reader for generic ``entry<TAB>definition`` files, with an optional header line.

A first line that starts ``entry<TAB>definition`` (any case) is a header; its further column
names become metadata keys for every row. Without a header a row has exactly two fields.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from defsentflow.dictionary.lines import iter_lines, line_rejection
from defsentflow.dictionary.records import DefinitionRecord, Record, RejectedRecord

__all__ = ["read_tsv"]


def read_tsv(path: str | os.PathLike, source: str = "tsv") -> Iterator[Record]:
    """Stream the records of one TSV file.

    Example:
        >>> list(read_tsv("words.tsv"))  # "dog\\ta domesticated canid"
        [DefinitionRecord(entry='dog', definition='a domesticated canid', source='tsv', file='words.tsv', line=1)]
    """
    file = str(path)
    columns: list[str] | None = None
    for no, text in iter_lines(path):
        fields = text.split("\t")
        if no == 1 and [f.strip().lower() for f in fields[:2]] == ["entry", "definition"]:
            columns = [f.strip() for f in fields]
            continue
        if (bad := line_rejection(source, file, no, text)) is not None:
            yield bad
            continue
        want = len(columns) if columns else 2
        if len(fields) != want:
            yield RejectedRecord(source, file, no, "malformed", text,
                                 f"expected {want} tab-separated fields, got {len(fields)}")
            continue
        meta = dict(zip(columns[2:], fields[2:])) if columns and len(columns) > 2 else None
        yield DefinitionRecord(fields[0], fields[1], source, file, no, meta=meta)
