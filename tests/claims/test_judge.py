"""The claims' aggregation and verdicts, against statistics' mean and stdev."""

from __future__ import annotations

import statistics

import pytest

from defsentflow.claims import Series, judge, mean_sd


def test_mean_sd_matches_statistics():
    values = [49.71, 50.3, 48.9]
    m, sd = mean_sd(values)
    assert m == pytest.approx(statistics.mean(values))
    assert sd == pytest.approx(statistics.stdev(values))
    assert mean_sd([3.0]) == (3.0, None)
    assert mean_sd([]) == (None, None)


def test_clear_increase_holds():
    a = Series("DefSent", {0: 45.0, 1: 45.5, 2: 44.8})
    b = Series("DefSent+", {0: 49.0, 1: 49.9, 2: 48.7})
    j = judge([a, b])
    diffs = [4.0, 4.4, 3.9]
    assert (j.holds, j.clear, j.verdict, j.n) == (True, True, "holds", 3)
    assert j.diff_mean == pytest.approx(statistics.mean(diffs))
    assert j.diff_sd == pytest.approx(statistics.stdev(diffs))


def test_noisy_increase_holds_within_noise_and_reverse_does_not_hold():
    a = Series("a", {0: 50.0, 1: 52.0, 2: 48.0})
    b = Series("b", {0: 51.0, 1: 49.0, 2: 50.5})  # mean 50.17 > 50.0, paired diffs +1, -3, +2.5
    assert judge([a, b]).verdict == "holds (within noise)"
    assert judge([b, a]).verdict == "does not hold (within noise)"
    clearly_down = judge([Series("x", {0: 10.0, 1: 10.2, 2: 9.9}), Series("y", {0: 5.0, 1: 5.1, 2: 4.8})])
    assert (clearly_down.holds, clearly_down.verdict) == (False, "does not hold")


def test_three_series_must_increase_at_every_step():
    c = Series("2000", {0: 40.0, 1: 41.0})
    b = Series("4000", {0: 45.0, 1: 45.5})
    a = Series("8000", {0: 44.0, 1: 44.2})
    assert judge([c, b, a]).holds is False          # 4000 > 8000 breaks the order
    assert judge([c, a, b]).holds is True
    assert judge([c, a, b]).diff_mean == pytest.approx(4.75)  # last minus first, paired by seed


def test_one_seed_and_missing_figures():
    j = judge([Series("mean", {0: 43.0}), Series("SBERT-WK", {0: 47.0})])
    assert (j.holds, j.clear, j.verdict, j.n) == (True, None, "holds (one seed)", 1)
    missing = judge([Series("a", {}), Series("b", {0: 1.0})])
    assert (missing.holds, missing.verdict, missing.n) == (None, "not measured", 0)
    # only seeds present in both series are paired
    assert judge([Series("a", {0: 1.0, 1: 2.0}), Series("b", {1: 3.0, 2: 9.0})]).n == 1
    with pytest.raises(ValueError):
        judge([Series("alone", {0: 1.0})])


def test_series_side_by_side_share_their_decimals():
    from defsentflow.claims import series_text

    assert series_text([Series("step 1", {0: 0.02975, 1: 0.02975}), Series("step 3", {0: 0.115})]) == \
        "step 1 0.030 ± 0.000 vs step 3 0.115"
    assert series_text([Series("raw", {0: 0.00058}), Series("DefSent", {0: 0.00061})]) == "raw 0.00058 vs DefSent 0.00061"
    assert series_text([Series("a", {}), Series("b", {0: 49.654})]) == "a n/a vs b 49.65"
