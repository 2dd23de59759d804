"""Aggregate per-seed figures into a claim's row and decide whether it holds.

A claim is a list of *series* (one per arm, e.g. DefSent then DefSent+), each a figure per seed,
in the order the paper says is increasing. It **holds** when the means increase along the list.
Paired by seed, the differences between neighbouring series say whether that is **clear**: the
mean difference exceeds twice its standard error (sd / sqrt(n)) for every neighbouring pair.
``diff`` is the paired difference between the last and the first series (mean +- sd over seeds).

Example:
    >>> r = judge([Series("DefSent", {0: 50.0, 1: 51.0}), Series("DefSent+", {0: 55.0, 1: 55.5})])
    >>> r.holds, round(r.diff_mean, 2)
    (True, 4.75)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Judgement", "Series", "digits", "judge", "mean_sd", "series_text"]


@dataclass(frozen=True)
class Series:
    """One arm's figure per seed."""

    label: str
    values: dict[int, float]

    @property
    def seeds(self) -> list[int]:
        return sorted(self.values)

    def text(self, places: int | None = None) -> str:
        """``label mean ± sd`` with ``places`` decimals (default: for the figure's scale; ``label n/a``
        without figures)."""
        m, sd = mean_sd(list(self.values.values()))
        if m is None:
            return f"{self.label} n/a"
        n = digits(m) if places is None else places
        return f"{self.label} {m:.{n}f}" + ("" if sd is None else f" ± {sd:.{n}f}")

    def to_dict(self) -> dict[str, Any]:
        m, sd = mean_sd(list(self.values.values()))
        return {"label": self.label, "seeds": self.seeds, "values": [self.values[s] for s in self.seeds],
                "mean": m, "sd": sd, "n": len(self.values)}


@dataclass(frozen=True)
class Judgement:
    holds: bool | None          # None: a series has no figure
    clear: bool | None          # None: fewer than two paired seeds
    diff_mean: float | None
    diff_sd: float | None
    n: int                      # seeds paired between the first and the last series
    verdict: str = "not measured"  # holds | holds (within noise) | does not hold | does not hold (within noise)


def digits(scale: float | None) -> int:
    """Decimals to print figures of this scale with: STS x100 -> 2, an IsoScore -> 3, an MRR of 0.0006 -> 5."""
    a = abs(scale or 0.0)
    return 2 if a >= 1.5 else 3 if a >= 0.05 or a == 0 else 5


def series_text(series: list[Series]) -> str:
    """The series side by side, in the claim's order, with the same decimals for all."""
    means = [mean_sd(list(s.values.values()))[0] for s in series]
    n = digits(max((abs(m) for m in means if m is not None), default=None))
    return " vs ".join(s.text(n) for s in series)


def mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (None for no values; sd None for one value)."""
    if not values:
        return None, None
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, None
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _paired(a: Series, b: Series) -> list[float]:
    return [b.values[s] - a.values[s] for s in sorted(set(a.values) & set(b.values))]


def judge(series: list[Series]) -> Judgement:
    """Whether the series' means increase in order, how clearly, and the last-minus-first difference."""
    if len(series) < 2:
        raise ValueError("a claim compares at least two series")
    diffs = _paired(series[0], series[-1])
    d_mean, d_sd = mean_sd(diffs)
    if any(not s.values for s in series):
        return Judgement(None, None, d_mean, d_sd, len(diffs))
    means = [mean_sd(list(s.values.values()))[0] for s in series]
    holds = all(b > a for a, b in zip(means, means[1:]))
    clear = _clearly_increasing(series) if holds else False
    if holds:
        verdict = "holds" if clear else "holds (one seed)" if clear is None else "holds (within noise)"
    else:  # clearly the other way round: each neighbouring step down is beyond noise
        against = _clearly_increasing(series[::-1])
        verdict = ("does not hold" if against else "does not hold (one seed)" if against is None
                   else "does not hold (within noise)")
    return Judgement(holds, clear, d_mean, d_sd, len(diffs), verdict)


def _clearly_increasing(series: list[Series]) -> bool | None:
    """Every neighbouring paired difference above twice its standard error (None: under two pairs)."""
    for a, b in zip(series, series[1:]):
        d = _paired(a, b)
        m, sd = mean_sd(d)
        if len(d) < 2 or sd is None or m is None:
            return None
        if not m > 2 * sd / math.sqrt(len(d)):
            return False
    return True
