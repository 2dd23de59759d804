"""When one figure beats another: only when they differ at the precision figures are reported at.

The rule of every choice between models (PST's choice of a step, the promotion gate): two figures
that print the same to :data:`DIGITS` significant digits (``86.71714`` and ``86.71699`` both read
``86.72``) are a tie, and a tie goes to the earlier model (the earlier step, the champion). A
difference of float rounding, or of an lr of 1e-9, never replaces a model.

Example:
    >>> beats(86.71714, 86.71699), tied(86.71714, 86.71699), beats(0.01674, 0.01457)
    (False, True, True)
"""

from __future__ import annotations

__all__ = ["DIGITS", "beats", "reported", "tied"]

DIGITS = 4
"""Significant digits of a reported figure (the ``.4g`` of reasons, reports and the gate's lines)."""


def reported(value: float) -> float:
    """``value`` as it is reported: rounded to :data:`DIGITS` significant digits."""
    return float(f"{value:.{DIGITS}g}")


def tied(a: float | None, b: float | None) -> bool:
    """Whether ``a`` and ``b`` are both figures and read the same as reported."""
    return a is not None and b is not None and reported(a) == reported(b)


def beats(a: float | None, b: float | None) -> bool:
    """Whether figure ``a`` is better than ``b`` as reported (None: no figure, beaten by any)."""
    return a is not None and (b is None or reported(a) > reported(b))
