"""Line-by-line reading shared by the line-oriented readers (Oxford, TSV, JSONL, wiktextract)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from defsentflow.dictionary.records import RejectedRecord
from defsentflow.dictionary.validate import printable, undecodable
from defsentflow.storage.bounded_json import NestingError, loads_bounded

__all__ = ["iter_json_lines", "iter_lines", "line_rejection"]


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` without the line break, streaming.

    Bytes are decoded with ``surrogateescape`` so a line with invalid UTF-8 is still yielded
    (and then quarantined as ``invalid_utf8``) instead of stopping the whole file. Only ``\\n``
    ends a line; a UTF-8 byte-order mark on the first line is dropped.
    """
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, 1):
            text = raw.decode("utf-8", "surrogateescape")
            if text.endswith("\n"):
                text = text[:-2] if text.endswith("\r\n") else text[:-1]
            if no == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield no, text


def line_rejection(source: str, file: str, no: int, text: str) -> RejectedRecord | None:
    """The rejection every line-oriented format shares: invalid UTF-8, empty, whitespace only."""
    if undecodable(text):
        return RejectedRecord(source, file, no, "invalid_utf8", printable(text), "line has bytes that are not UTF-8")
    if not text:
        return RejectedRecord(source, file, no, "empty", text, "empty line")
    if not text.strip():
        return RejectedRecord(source, file, no, "whitespace_only", text, "line is only whitespace")
    return None


def iter_json_lines(path: str | os.PathLike, source: str,
                    shape_problem: Callable[[Any], str | None]) -> Iterator[RejectedRecord | tuple[int, str, Any]]:
    """Each line of a JSONL file as ``(line number, text, object)``, or its rejection: the shared
    line rejections, invalid JSON, or what ``shape_problem`` finds wrong with the object (all
    ``malformed`` but the first)."""
    file = str(path)
    for no, text in iter_lines(path):
        if (bad := line_rejection(source, file, no, text)) is not None:
            yield bad
            continue
        try:
            obj = loads_bounded(text)
        except json.JSONDecodeError as exc:
            yield RejectedRecord(source, file, no, "malformed", text, f"invalid JSON: {exc.msg} at column {exc.colno}")
            continue
        except NestingError as exc:  # the parser would exhaust the stack: refused for the line, not the file
            yield RejectedRecord(source, file, no, "malformed", text, f"invalid JSON: {exc}")
            continue
        problem = shape_problem(obj)
        if problem:
            yield RejectedRecord(source, file, no, "malformed", text, problem)
            continue
        yield no, text, obj
