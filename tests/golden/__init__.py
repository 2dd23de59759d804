"""Golden figures: what the suite's CI-sized runs measured, checked every time they run (issue 42).

``figures.yaml`` (beside this file) holds, per figure, its value, a tolerance taken from the
measured run-to-run spread (``spread`` says which runs), the test that measures it and the
CHANGELOG.md line that set it. A test that measures a figure calls :func:`expect_figure`, which fails
naming the figure, its golden value and the new one. ``test_golden.py`` checks the file itself on
every run: each value is stated on the newest CHANGELOG.md line naming the figure (so a golden value
moves only in a commit that also says why), each tolerance is below 1.0, and each figure is measured
by the test it names.

Example:
    >>> expect_figure("positive_control.trained_stsb_dev", trained)   # doctest: +SKIP
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

FILE = Path(__file__).resolve().parent / "figures.yaml"
CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"

__all__ = ["CHANGELOG", "FILE", "expect_figure", "golden_figures"]


@cache
def golden_figures() -> dict[str, dict[str, Any]]:
    """``name -> {value, tolerance, spread, test, ...}`` from figures.yaml."""
    return yaml.safe_load(FILE.read_text())["figures"] or {}


def expect_figure(name: str, measured: float) -> None:
    """Fail unless ``measured`` is within the golden figure's tolerance, naming it, its golden value
    and the new one."""
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
