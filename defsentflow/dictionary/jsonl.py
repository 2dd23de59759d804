"""Reader for generic JSON Lines: ``{"entry": ..., "definition": ...}`` per line.

Optional keys with a meaning of their own: ``pos`` and ``synset`` (strings) and ``examples``
(a list of strings, stored in the examples table). Every other key is kept as metadata.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from defsentflow.dictionary.lines import iter_json_lines
from defsentflow.dictionary.records import DefinitionRecord, Record, RejectedRecord

__all__ = ["read_jsonl"]

_KNOWN = ("entry", "definition", "pos", "synset", "examples")


def read_jsonl(path: str | os.PathLike, source: str = "jsonl") -> Iterator[Record]:
    """Stream the records of one JSONL file.

    Example:
        >>> next(read_jsonl("d.jsonl"))  # {"entry": "dog", "definition": "a canid", "freq": 12}
        DefinitionRecord(entry='dog', definition='a canid', ..., meta={'freq': 12})
    """
    file = str(path)
    for item in iter_json_lines(path, source, _shape_problem):
        if isinstance(item, RejectedRecord):
            yield item
            continue
        no, _text, obj = item
        meta = {k: v for k, v in obj.items() if k not in _KNOWN} or None
        yield DefinitionRecord(obj["entry"], obj["definition"], source, file, no, pos=obj.get("pos"),
                               synset=obj.get("synset"), examples=tuple(obj.get("examples") or ()), meta=meta)


def _shape_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    for key in ("entry", "definition"):
        if key not in obj:
            return f"missing key {key!r}"
        if not isinstance(obj[key], str):
            return f"{key!r} must be a string, got {type(obj[key]).__name__}"
    for key in ("pos", "synset"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            return f"{key!r} must be a string, got {type(obj[key]).__name__}"
    ex = obj.get("examples")
    if ex is not None and not (isinstance(ex, list) and all(isinstance(e, str) for e in ex)):
        return "'examples' must be a list of strings"
    return None
