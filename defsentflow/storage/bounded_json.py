"""JSON from files the project did not write itself (dictionary and corpus sources, on-disk records):
parsed with a bound on nesting and, for files, on size, so no input can exhaust the stack or memory.

Python's parser recurses once per level: about a thousand ``[`` end in a ``RecursionError`` that names
no file. Here a document nested deeper than ``LIMITS["nesting"]`` levels is a :class:`NestingError`
(a ValueError, one line) instead, whatever its depth.

Example:
    >>> loads_bounded('{"a": [1, 2]}')
    {'a': [1, 2]}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from defsentflow.limits import LIMITS

__all__ = ["NestingError", "check_nesting", "loads_bounded", "read_json_file"]


class NestingError(ValueError):
    """A JSON or YAML document nested deeper than the bound."""


def check_nesting(obj: Any, limit: int = LIMITS["nesting"]) -> None:
    """Raise :class:`NestingError` if lists and mappings in ``obj`` nest deeper than ``limit`` (iterative)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            raise NestingError(f"nested deeper than {limit} levels")
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def loads_bounded(text: str | bytes, limit: int = LIMITS["nesting"]) -> Any:
    """``json.loads(text)``, refusing documents nested deeper than ``limit``.

    Raises:
        json.JSONDecodeError: not JSON.
        NestingError: nested too deep.
    """
    try:
        obj = json.loads(text)
    except RecursionError:
        raise NestingError(f"nested deeper than {limit} levels") from None
    opens = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    if opens > limit:  # only a document with that many brackets can be that deep: most lines skip the walk
        check_nesting(obj, limit)
    return obj


def read_json_file(path: str | os.PathLike, *, max_bytes: int, what: str = "file") -> Any:
    """The JSON document in ``path``, read only if it is a regular file (not a link) of at most
    ``max_bytes``, UTF-8 and nested at most ``LIMITS["nesting"]`` levels.

    Raises:
        ValueError: one line naming the file and what is wrong.
    """
    p = Path(path)
    try:
        if p.is_symlink() or not p.is_file():
            raise ValueError(f"{p}: the {what} is not a regular file")
        size = p.stat().st_size
        if size > max_bytes:
            raise ValueError(f"{p}: the {what} has {size} bytes (limit {max_bytes})")
        text = p.read_bytes().decode("utf-8")
        return loads_bounded(text)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: the {what} is not UTF-8 (byte {exc.start})") from None
    except NestingError as exc:
        raise ValueError(f"{p}: the {what} is {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: the {what} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except OSError as exc:
        raise ValueError(f"{p}: the {what} cannot be read ({exc.strerror or type(exc).__name__})") from None
