"""Aggregate per-seed figures into a claim's row and judge it by a stated test.

A claim is a list of *series* (one per arm, e.g. DefSent then DefSent+, or dataset c, b, a), each a
figure per seed, in the order the paper says is increasing. The test is stated once for every claim
and applied to **every adjacent pair** of series (c < b and b < a; a two-arm claim has one pair), so an
ordered claim is judged on each step it names, never on its ends alone:

* **effect**: the mean over seeds of the paired difference, the later series minus the earlier
  (paired by seed);
* **p**: the one-sided paired t-test of "effect > 0" (``scipy.stats.ttest_rel``, ``alternative=
  "greater"``, n - 1 degrees of freedom: with 3 seeds the 5% critical t is 2.92, not 2); **p_down**:
  the opposite one-sided test, "effect < 0";
* **ci_low, ci_high**: the two-sided 90% t interval of the effect (not adjusted), whose ends are the
  one-sided 95% bounds;
* **p_holm, p_down_holm**: ``p`` and ``p_down`` adjusted by Holm's step-down method (:func:`holm`) in
  **one family holding both directions of every tested pair** (:func:`holm_both_directions`): every
  pair of every claim that a run tests contributes two hypotheses, "effect > 0" and "effect < 0", so
  the chance that *any* verdict (a "holds" or a "contradicted") is called wrongly stays at most alpha
  (Holm's guarantee, whatever the dependence between the tests). Holm on each direction apart, as before
  issue 57, kept 0.05 per direction only: on 50,000 simulated no-effect families of 9 pairs it called
  some verdict wrongly in 9.6% of them, this rule in 4.9% (tests/claims/test_judge.py measures both).
  Which claims are in the family depends on the checks below: a claim that cannot be tested (too few
  seeds, an arm not functional, no figures) contributes no pair. A claim judged alone (:func:`judge`) is
  a family of its own pairs, both directions.

Verdicts, one rule for every claim, all read from the adjusted p:

* ``holds``: every pair's adjusted ``p`` is below alpha (every step rises);
* ``contradicted``: some pair's adjusted ``p_down`` is below alpha (a step the claim names goes the
  other way, beyond chance);
* ``not supported``: neither;
* ``cannot be tested here (<reason>)``: fewer than ``min_seeds`` paired seeds, an arm not functional
  (:class:`Check`: at its metric's floor, not above chance, or not above the untrained encoder on its
  own metric), a series without figures, or a control that cannot test the claim (its reason).

The row (:class:`Judgement`) shows the test that decided it: a contradicted claim's most contradicted
pair with its ``p_down`` and adjusted ``p_down`` (``Judgement.p`` / ``p_holm``, ``against`` True),
otherwise the weakest pair (the largest adjusted ``p``) with its ``p`` and adjusted ``p``; every pair
is listed in ``pairs``.

A verdict is about the run it was measured on: :mod:`defsentflow.claims.run` records it with the
claims file's scope ("holds on this control") and the control's departures from the paper.

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

import numpy as np

from defsentflow.evaluation.ranks import chance_mrr

__all__ = ["ALPHA", "CANNOT", "Check", "Judgement", "MIN_SEEDS", "PairTest", "Series", "VERDICTS", "chance_mrr", "digits",
           "holm", "holm_array", "holm_both_directions", "judge", "judge_family", "mean_sd", "series_text"]

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
    """Whether one arm is functional: its mean on its own metric above the metric's ``floor`` (a
    figure that cannot go lower, where every arm looks the same: MRR@10 0 when no query's answer is in
    the top 10), above ``chance`` and above the untrained encoder's figure on that metric (a reference
    None: not checked). ``detail`` is said with a failure (e.g. the full-rank figures the floor hides)."""

    label: str                  # "DefSent: word-prediction MRR@10"
    value: float | None         # the arm's mean over seeds on that metric
    chance: float | None = None
    untrained: float | None = None
    floor: float | None = None
    detail: str | None = None

    def failure(self) -> str | None:
        """Why the arm is not functional, or None."""
        if self.value is None:
            return f"{self.label} not measured"
        why = self._failure()
        return None if why is None else why + (f" ({self.detail})" if self.detail else "")

    def _failure(self) -> str | None:
        if self.floor is not None and not self.value > self.floor:
            return f"{self.label} {self.value:.3g} at the metric's floor {self.floor:.3g}"
        if self.chance is not None and not self.value > self.chance:
            return f"{self.label} {self.value:.3g} not above chance {self.chance:.3g}"
        if self.untrained is not None and not self.value > self.untrained:
            return f"{self.label} {self.value:.3g} not above the untrained encoder's {self.untrained:.3g}"
        return None


@dataclass(frozen=True)
class PairTest:
    """The stated test of one adjacent pair of series (``lower`` then ``higher`` in the claim's order)."""

    lower: str
    higher: str
    effect: float | None        # mean paired difference, higher minus lower
    ci_low: float | None        # two-sided 90% t interval of the effect (not adjusted)
    ci_high: float | None
    p: float | None             # one-sided paired t-test of effect > 0
    p_down: float | None        # one-sided paired t-test of effect < 0
    diff_sd: float | None
    n: int
    p_holm: float | None = None       # p Holm-adjusted over the family, both directions (judge_family)
    p_down_holm: float | None = None

    def verdict(self, alpha: float = ALPHA) -> str:
        if self.p_down_holm is not None and self.p_down_holm < alpha:
            return "contradicted"
        return "holds" if self.p_holm is not None and self.p_holm < alpha else "not supported"

    def to_dict(self, alpha: float = ALPHA) -> dict[str, Any]:
        return {"lower": self.lower, "higher": self.higher, "effect": self.effect, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "p": self.p, "p_down": self.p_down, "p_holm": self.p_holm,
                "p_down_holm": self.p_down_holm, "diff_sd": self.diff_sd, "n": self.n,
                "verdict": self.verdict(alpha) if self.p is not None else None}


@dataclass(frozen=True)
class Judgement:
    verdict: str                # holds | not supported | contradicted | cannot be tested here (<reason>)
    effect: float | None        # the deciding pair's mean paired difference (module docstring)
    ci_low: float | None        # its two-sided 90% t interval
    ci_high: float | None
    p: float | None             # the deciding test's one-sided p: effect > 0, or effect < 0 where ``against``
    diff_sd: float | None
    n: int                      # seeds paired in every pair (the fewest)
    p_holm: float | None = None  # that p adjusted over the family (both directions); None: not tested
    pairs: tuple[PairTest, ...] = ()   # every adjacent pair, in the claim's order
    against: bool = False       # the deciding test is the opposite one (effect < 0): a contradicted claim

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


def _pair_test(lower: Series, higher: Series, alpha: float) -> PairTest:
    from scipy import stats  # lazy: scipy loads only where it is used

    a, b = _paired(lower, higher)
    diffs = [y - x for x, y in zip(a, b)]
    effect, sd = mean_sd(diffs)
    n = len(diffs)
    if n < 2:
        return PairTest(lower.label, higher.label, effect, None, None, None, None, sd, n)
    if sd == 0.0:  # every seed moved by the same amount: the t statistic is undefined
        lo = hi = effect
        p = 0.0 if effect > 0 else 1.0
        p_down = 0.0 if effect < 0 else 1.0
    else:
        p = float(stats.ttest_rel(b, a, alternative="greater").pvalue)
        p_down = float(stats.ttest_rel(b, a, alternative="less").pvalue)
        half = float(stats.t.ppf(1 - alpha, n - 1)) * sd / math.sqrt(n)
        lo, hi = effect - half, effect + half
    return PairTest(lower.label, higher.label, effect, lo, hi, p, p_down, sd, n)


def _summary(pairs: Sequence[PairTest], alpha: float, reason: str | None = None) -> Judgement:
    """A claim's judgement from its adjusted pairs (``reason``: why it cannot be tested). The row's
    figures are its deciding test's: a contradicted claim's most contradicted pair (smallest adjusted
    ``p_down``, shown with ``p_down``), otherwise its weakest (largest adjusted ``p``)."""
    n = min((x.n for x in pairs), default=0)
    if reason is not None or not pairs:
        verdict = f"{CANNOT} ({reason})"
        pairs = [replace(x, p_holm=None, p_down_holm=None) for x in pairs]  # outside the family
        show = pairs[-1] if len(pairs) == 1 else None
        if show is None:
            return Judgement(verdict, None, None, None, None, None, n, None, tuple(pairs))
        return Judgement(verdict, show.effect, show.ci_low, show.ci_high, show.p, show.diff_sd, n, None, tuple(pairs))
    verdict = _verdict(pairs, alpha)
    if verdict == "contradicted":
        show = min(pairs, key=lambda x: x.p_down_holm if x.p_down_holm is not None else 2.0)
        return Judgement(verdict, show.effect, show.ci_low, show.ci_high, show.p_down, show.diff_sd, n,
                         show.p_down_holm, tuple(pairs), against=True)
    show = max(pairs, key=lambda x: x.p_holm if x.p_holm is not None else -1.0)
    return Judgement(verdict, show.effect, show.ci_low, show.ci_high, show.p, show.diff_sd, n, show.p_holm, tuple(pairs))


def _verdict(pairs: Sequence[PairTest], alpha: float) -> str:
    verdicts = [x.verdict(alpha) for x in pairs]
    if "contradicted" in verdicts:
        return "contradicted"
    return "holds" if all(v == "holds" for v in verdicts) else "not supported"


def judge(series: list[Series], checks: list[Check] | tuple[Check, ...] = (), *, alpha: float = ALPHA,
          min_seeds: int = MIN_SEEDS) -> Judgement:
    """The stated test of a claim (module docstring): every adjacent pair of series, paired by seed,
    adjusted over this claim's pairs in both directions (:func:`judge_family` adjusts over several claims)."""
    if len(series) < 2:
        raise ValueError("a claim compares at least two series")
    pairs = [_pair_test(lo, hi, alpha) for lo, hi in zip(series, series[1:])]
    empty = [s.label for s in series if not s.values]
    n = min(x.n for x in pairs)
    if empty or n < min_seeds:  # no test at all: the effect only
        pairs = [replace(x, ci_low=None, ci_high=None, p=None, p_down=None) for x in pairs]
        reason = (f"no figures for {', '.join(empty)}" if empty
                  else f"too few seeds: {n} paired, the test needs {min_seeds}")
    else:
        failed = [f for f in (c.failure() for c in checks) if f]
        reason = f"an arm is not functional: {'; '.join(failed)}" if failed else ""
    if reason:
        return _summary(pairs, alpha, reason)
    return judge_family([Judgement("not supported", None, None, None, None, None, n, None, tuple(pairs))],
                        alpha=alpha)[0]


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p values given (None: not tested, left None): the k-th
    smallest of m is multiplied by m - k + 1, then made non-decreasing, capped at 1.

    Example:
        >>> holm([0.01, 0.04, None, 0.03])
        [0.03, 0.06, None, 0.06]
    """
    tested = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    for i, q in zip(tested, holm_array(np.array([pvalues[i] for i in tested], dtype=float)).tolist()):
        out[i] = round(q, 12)
    return out


def holm_array(p: np.ndarray) -> np.ndarray:
    """:func:`holm` along the last axis of an array (each row a family; vectorised for simulations)."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * np.arange(m, 0, -1)
    ranked = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    out = np.empty_like(ranked)
    np.put_along_axis(out, order, ranked, axis=-1)
    return out


def holm_both_directions(up: np.ndarray, down: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rule's adjustment (module docstring): ``up`` (p of effect > 0) and ``down`` (p of effect < 0),
    one value per pair along the last axis, adjusted by Holm as ONE family of 2 x pairs hypotheses."""
    both = holm_array(np.concatenate([up, down], axis=-1))
    m = up.shape[-1]
    return both[..., :m], both[..., m:]


def judge_family(judgements: Sequence[Judgement], *, alpha: float = ALPHA) -> list[Judgement]:
    """The claims of one run judged together: both directions of every pair of every tested claim are
    one family; ``p`` and ``p_down`` are Holm-adjusted in it (:func:`holm_both_directions`), and each
    tested claim's verdict is read from the adjusted figures (module docstring); a claim that cannot be
    tested keeps its reason."""
    members = [(i, k) for i, j in enumerate(judgements) if j.tested for k in range(len(j.pairs))]
    up, down = holm_both_directions(np.array([judgements[i].pairs[k].p for i, k in members], dtype=float),
                                    np.array([judgements[i].pairs[k].p_down for i, k in members], dtype=float))
    adjusted = {m: (round(float(u), 12), round(float(d), 12)) for m, u, d in zip(members, up, down)}
    out = []
    for i, j in enumerate(judgements):
        if not j.tested:
            out.append(j)
            continue
        pairs = [replace(x, p_holm=adjusted[(i, k)][0], p_down_holm=adjusted[(i, k)][1]) for k, x in enumerate(j.pairs)]
        out.append(_summary(pairs, alpha))
    return out
