"""Golden figures: what the suite's CI-sized runs measured, checked every time they run (issue 42).

``figures.yaml`` (beside this file) holds, per figure, its value, a tolerance taken from the
measured run-to-run spread (``spread`` says which runs), the test that measures it and the
CHANGELOG.md line that set it. A test that measures a figure calls :func:`expect_figure`, which fails
naming the figure, its golden value and the new one. ``test_golden.py`` checks the file itself on
every run: each value is the NEW value of the newest CHANGELOG.md line naming the figure
(:func:`changelog_move`: ``| `name` | old | new | why |`` or ``` `name` old -> new ```), so a golden
value moves only in a commit that says why, and a revert to the old value fails; each tolerance is
below 1.0, and each figure is measured by the test it names. ``DEFSENTFLOW_GOLDEN_LOG=<file>`` appends
every measured figure to that file (how the spreads in figures.yaml were measured).

Example:
    >>> expect_figure("positive_control.trained_stsb_dev", trained)   # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

FILE = Path(__file__).resolve().parent / "figures.yaml"
CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"

__all__ = ["CHANGELOG", "FILE", "changelog_move", "expect_figure", "golden_figures", "golden_value_error"]

_NUMBER = r"-?\d+(?:\.\d+)?"


@cache
def golden_figures() -> dict[str, dict[str, Any]]:
    """``name -> {value, tolerance, spread, test, ...}`` from figures.yaml."""
    return yaml.safe_load(FILE.read_text())["figures"] or {}


def changelog_move(name: str, text: str) -> tuple[str | None, str | None, str] | None:
    """``(old, new, line)`` of the newest line of a changelog ``text`` (newest first) naming ``name`` in
    backticks: a table row ``| `name` | old | new | ...`` (old empty: first recorded) or an inline
    ``` `name` old -> new ``` (``-> new``: first recorded); ``new`` None where that line states no move.
    None where no line names the figure."""
    lines = [line for line in text.splitlines() if f"`{name}`" in line]
    if not lines:
        return None
    key = re.escape(f"`{name}`")
    found = (re.match(rf"^\|\s*{key}\s*\|\s*({_NUMBER})?\s*\|\s*({_NUMBER})\s*\|", lines[0])
             or re.search(rf"{key}:?\s*({_NUMBER})?\s*->\s*({_NUMBER})(?![\d.])", lines[0]))
    return (found.group(1), found.group(2), lines[0]) if found else (None, None, lines[0])


def golden_value_error(name: str, value: str | float, text: str) -> str | None:
    """Why ``value`` cannot be the golden value of ``name`` under the changelog ``text``, or None: it must
    equal the new value of the newest line naming the figure."""
    move = changelog_move(name, text)
    if move is None:
        return f"golden figure {name} ({value}): no CHANGELOG.md line names it"
    old, new, line = move
    if new is None:
        return (f"golden figure {name}: the newest CHANGELOG.md line naming it states no move ({line!r}); write "
                f"`{name}` old -> new (or the table row | `{name}` | old | new | why |)")
    if float(value) != float(new):
        return (f"golden figure {name}: its value {value} in tests/golden/{FILE.name} is not the new value {new} of the "
                f"newest CHANGELOG.md line naming it ({line!r})" + (" but that line's old value: a revert" if
                                                                  old is not None and float(old) == float(value) else ""))
    return None


def expect_figure(name: str, measured: float) -> None:
    """Fail unless ``measured`` is within the golden figure's tolerance, naming it, its golden value
    and the new one."""
    log = os.environ.get("DEFSENTFLOW_GOLDEN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{name}\t{float(measured)!r}\n")
    figures = golden_figures()
    if name not in figures:
        raise AssertionError(f"golden figure {name!r} is not in {FILE} (measured {measured!r}); add it with a "
                             "CHANGELOG.md line")
    g = figures[name]
    value, tol = float(g["value"]), float(g["tolerance"])
    if not abs(float(measured) - value) <= tol:
        raise AssertionError(
            f"golden figure {name} moved: golden {value:g} ± {tol:g} ({FILE.name}), measured {float(measured):.6g} "
            f"({float(measured) - value:+.4g}). If the change is intended, set the new value in "
            f"tests/golden/{FILE.name} and add a CHANGELOG.md line naming {name} and the new value, saying why it moved.")
