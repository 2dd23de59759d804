"""Plain-text tables for the terminal."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["print_table", "format_table", "printable"]

# C0/C1 control characters (ESC starts terminal escape sequences; CR and BS overwrite what was
# printed) and the Unicode bidirectional overrides that reorder what a reader sees. Newline and
# tab are layout, not control, and stay.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control characters shown as escapes (``\\x1b``), safe to print on a terminal.

    Example:
        >>> printable("a\x1b[2Jb")
        'a\\x1b[2Jb'
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1 else f"{v:.2f}"
    return printable(str(v))


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(out)


def _numeric(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    print(format_table(columns, rows))
