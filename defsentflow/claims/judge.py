"""Aggregate per-seed figures into a claim's row and judge it by a stated test.

A claim is a list of *series* (one per arm, e.g. DefSent then DefSent+), each a figure per seed,
in the order the paper says is increasing. The test is stated once for every claim:

* **effect**: the mean over seeds of the paired difference last minus first series (paired by seed);
* **p**: the one-sided paired t-test of "effect > 0" (``scipy.stats.ttest_rel``, ``alternative=
  "greater"``, n - 1 degrees of freedom: with 3 seeds the 5% critical t is 2.92, not 2);
* **ci_low, ci_high**: the two-sided 90% t interval of the effect, whose lower end is the one-sided
  95% bound;
* **p_holm**: ``p`` adjusted by Holm's step-down method over the claims a run tests (:func:`holm`),
  so the chance that any of them is called "holds" wrongly stays under alpha (eight one-sided tests
  at 0.05 without it: up to 0.34).

Verdicts, one rule for every claim:

* ``holds``: the Holm-adjusted p is below alpha;
* ``contradicted``: the effect's 90% interval lies wholly on the wrong side (``ci_high < 0``);
* ``not supported``: neither (the test does not support the claim; the effect and its interval say
  by how much);
* ``cannot be tested here (<reason>)``: fewer than ``min_seeds`` paired seeds, an arm not functional
  (:class:`Check`: not above chance, or not above the untrained encoder on its own metric), a series
  without figures, or a control that cannot test the claim (its reason).

Example:
    >>> r = judge([Series("DefSent", {0: 50.0, 1: 51.0, 2: 50.5}), Series("DefSent+", {0: 55.0, 1: 55.5, 2: 56.5})])
    >>> r.verdict, round(r.effect, 2)
    ('holds', 5.17)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from defsentflow.evaluation.ranks import chance_mrr

__all__ = ["ALPHA", "CANNOT", "Check", "Judgement", "MIN_SEEDS", "Series", "VERDICTS", "chance_mrr", "digits", "holm",
           "judge", "judge_family", "mean_sd", "series_text"]

ALPHA = 0.05
MIN_SEEDS = 3
CANNOT = "cannot be tested here"
VERDICTS = ("holds", "not supported", "contradicted", CANNOT)


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
    verdict: str                # holds | not supported | contradicted | cannot be tested here (<reason>)
    effect: float | None        # mean paired difference, last minus first series
    ci_low: float | None        # two-sided 90% t interval of the effect (lower end: one-sided 95% bound)
    ci_high: float | None
    p: float | None             # one-sided paired t-test of effect > 0
    diff_sd: float | None
    n: int                      # seeds paired between the first and the last series
    p_holm: float | None = None  # p adjusted over the claims tested together (holm); None: not tested

    @property
    def tested(self) -> bool:
        return not self.verdict.startswith(CANNOT)

    @property
    def holds(self) -> bool | None:
        return self.verdict == "holds" if self.tested else None


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
        # alone, a claim's p is its own family's adjusted p (judge_family adjusts over several)
        return Judgement(verdict, effect, lo, hi, p, sd, n, None if verdict.startswith(CANNOT) else p)

    empty = [s.label for s in series if not s.values]
    if empty:
        return out(f"{CANNOT} (no figures for {', '.join(empty)})")
    if n < min_seeds:
        return out(f"{CANNOT} (too few seeds: {n} paired, the test needs {min_seeds})")
    if sd == 0.0:  # every seed moved by the same amount: the t statistic is undefined
        lo = hi = effect
        p = 0.0 if effect > 0 else 1.0
    else:
        p = float(stats.ttest_rel(last, first, alternative="greater").pvalue)
        half = float(stats.t.ppf(1 - alpha, n - 1)) * sd / math.sqrt(n)
        lo, hi = effect - half, effect + half
    failed = [f for f in (c.failure() for c in checks) if f]
    if failed:
        return out(f"{CANNOT} (an arm is not functional: {'; '.join(failed)})", lo, hi, p)
    return out(_verdict(p, hi, alpha), lo, hi, p)


def _verdict(p: float, ci_high: float, alpha: float) -> str:
    if ci_high < 0:
        return "contradicted"
    return "holds" if p < alpha else "not supported"


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p values given (None: not tested, left None): the k-th
    smallest of m is multiplied by m - k + 1, then made non-decreasing, capped at 1.

    Example:
        >>> holm([0.01, 0.04, None, 0.03])
        [0.03, 0.06, None, 0.06]
    """
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m, running = len(tested), 0.0
    out: list[float | None] = [None] * len(pvalues)
    for k, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - k) * p))
        out[i] = round(running, 12)
    return out


def judge_family(judgements: Sequence[Judgement], *, alpha: float = ALPHA) -> list[Judgement]:
    """The claims of one run judged together: Holm-adjusted p over those tested, and each tested
    claim's verdict from it (module docstring); a claim that cannot be tested keeps its reason."""
    adjusted = holm([j.p if j.tested else None for j in judgements])
    out = []
    for j, ph in zip(judgements, adjusted):
        if ph is None or j.ci_high is None:
            out.append(replace(j, p_holm=None))
        else:
            out.append(replace(j, p_holm=ph, verdict=_verdict(ph, j.ci_high, alpha)))
    return out
