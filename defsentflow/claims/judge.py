"""Aggregate per-seed figures into a claim's row and judge it by a stated test.

A claim is a list of *series* (one per arm, e.g. DefSent then DefSent+), each a figure per seed,
in the order the paper says is increasing. The test is stated once for every claim:

* **effect**: the mean over seeds of the paired difference last minus first series (paired by seed);
* **p**: the one-sided paired t-test of "effect > 0" (``scipy.stats.ttest_rel``, ``alternative=
  "greater"``, n - 1 degrees of freedom: with 3 seeds the 5% critical t is 2.92, not 2);
* **ci_low, ci_high**: the two-sided 90% t interval of the effect, whose lower end is the one-sided
  95% bound: the claim holds exactly when ``ci_low > 0``.

Verdicts are only ``holds`` (p < alpha), ``does not hold`` (p >= alpha: the test does not support
the claim; the effect and its interval say by how much) and ``inconclusive (<reason>)``: fewer
than ``min_seeds`` paired seeds, an arm not functional (:class:`Check`: not above chance, or not
above the untrained encoder on its own metric), or a series without figures.

Example:
    >>> r = judge([Series("DefSent", {0: 50.0, 1: 51.0, 2: 50.5}), Series("DefSent+", {0: 55.0, 1: 55.5, 2: 56.5})])
    >>> r.verdict, round(r.effect, 2)
    ('holds', 5.17)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from defsentflow.evaluation.ranks import chance_mrr

__all__ = ["ALPHA", "Check", "Judgement", "MIN_SEEDS", "Series", "chance_mrr", "digits", "judge", "mean_sd",
           "series_text"]

ALPHA = 0.05
MIN_SEEDS = 3


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
class Check:
    """Whether one arm is functional: its mean on its own metric above ``chance`` and above the
    untrained encoder's figure on that metric (either reference None: not checked)."""

    label: str                  # "DefSent: word-prediction MRR@10"
    value: float | None         # the arm's mean over seeds on that metric
    chance: float | None = None
    untrained: float | None = None

    def failure(self) -> str | None:
        """Why the arm is not functional, or None."""
        if self.value is None:
            return f"{self.label} not measured"
        if self.chance is not None and not self.value > self.chance:
            return f"{self.label} {self.value:.3g} not above chance {self.chance:.3g}"
        if self.untrained is not None and not self.value > self.untrained:
            return f"{self.label} {self.value:.3g} not above the untrained encoder's {self.untrained:.3g}"
        return None


@dataclass(frozen=True)
class Judgement:
    verdict: str                # holds | does not hold | inconclusive (<reason>)
    effect: float | None        # mean paired difference, last minus first series
    ci_low: float | None        # two-sided 90% t interval of the effect (lower end: one-sided 95% bound)
    ci_high: float | None
    p: float | None             # one-sided paired t-test of effect > 0
    diff_sd: float | None
    n: int                      # seeds paired between the first and the last series

    @property
    def holds(self) -> bool | None:
        return None if self.verdict.startswith("inconclusive") else self.verdict == "holds"


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


def _paired(a: Series, b: Series) -> tuple[list[float], list[float]]:
    seeds = sorted(set(a.values) & set(b.values))
    return [a.values[s] for s in seeds], [b.values[s] for s in seeds]


def judge(series: list[Series], checks: list[Check] | tuple[Check, ...] = (), *, alpha: float = ALPHA,
          min_seeds: int = MIN_SEEDS) -> Judgement:
    """The stated test of a claim (module docstring): last series against the first, paired by seed."""
    from scipy import stats  # lazy: scipy loads only where it is used

    if len(series) < 2:
        raise ValueError("a claim compares at least two series")
    first, last = _paired(series[0], series[-1])
    diffs = [b - a for a, b in zip(first, last)]
    effect, sd = mean_sd(diffs)
    n = len(diffs)

    def out(verdict: str, lo: float | None = None, hi: float | None = None, p: float | None = None) -> Judgement:
        return Judgement(verdict, effect, lo, hi, p, sd, n)

    empty = [s.label for s in series if not s.values]
    if empty:
        return out(f"inconclusive (no figures for {', '.join(empty)})")
    if n < min_seeds:
        return out(f"inconclusive (too few seeds: {n} paired, the test needs {min_seeds})")
    if sd == 0.0:  # every seed moved by the same amount: the t statistic is undefined
        lo = hi = effect
        p = 0.0 if effect > 0 else 1.0
    else:
        p = float(stats.ttest_rel(last, first, alternative="greater").pvalue)
        half = float(stats.t.ppf(1 - alpha, n - 1)) * sd / math.sqrt(n)
        lo, hi = effect - half, effect + half
    failed = [f for f in (c.failure() for c in checks) if f]
    if failed:
        return out(f"inconclusive (baseline not functional: {'; '.join(failed)})", lo, hi, p)
    return out("holds" if p < alpha else "does not hold", lo, hi, p)
