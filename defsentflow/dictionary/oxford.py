"""Reader for the Oxford dictionary files of Ishiwatari et al. (2019), as used by DefSent.

One sense per line: ``word%oxford.N<TAB>pos<TAB>source<TAB>definition<TAB>...``. The sense
suffix after ``%`` is stripped from the entry; the definition is the fourth field. The sense
id, the source column and any further fields are kept as metadata.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from defsentflow.dictionary.lines import iter_lines, line_rejection
from defsentflow.dictionary.records import DefinitionRecord, Record, RejectedRecord

__all__ = ["read_oxford"]


def read_oxford(path: str | os.PathLike, source: str = "oxford") -> Iterator[Record]:
    """Stream the records of one Ishiwatari-format file.

    Example:
        >>> next(read_oxford("train.txt"))  # "tenant%oxford.2\\tnoun\\toxford\\ta person who ..."
        DefinitionRecord(entry='tenant', definition='a person who ...', pos='noun', ...)
    """
    file = str(path)
    for no, text in iter_lines(path):
        if (bad := line_rejection(source, file, no, text)) is not None:
            yield bad
            continue
        fields = text.split("\t")
        if len(fields) < 4:
            yield RejectedRecord(source, file, no, "malformed", text,
                                 f"expected at least 4 tab-separated fields (word%sense, pos, source, definition), got {len(fields)}")
            continue
        word, _, sense = fields[0].partition("%")
        meta: dict[str, object] = {"sense": sense or None, "source": fields[2]}
        if len(fields) > 4:
            meta["extra"] = fields[4:]
        yield DefinitionRecord(word, fields[3], source, file, no, pos=fields[1] or None, meta=meta)
