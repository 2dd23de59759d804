"""The claims' stated test: a one-sided paired t-test over seeds, against hand-computed figures."""

from __future__ import annotations

import math
import statistics

import pytest

from defsentflow.claims import Series, judge, mean_sd
from defsentflow.claims.judge import Check, chance_mrr

T_95_DF2 = 2.919986  # the one-sided 5% critical t with 2 degrees of freedom (3 seeds), from a t table


def test_mean_sd_matches_statistics():
    values = [49.71, 50.3, 48.9]
    m, sd = mean_sd(values)
    assert m == pytest.approx(statistics.mean(values))
    assert sd == pytest.approx(statistics.stdev(values))
    assert mean_sd([3.0]) == (3.0, None)
    assert mean_sd([]) == (None, None)


def test_clear_increase_holds_with_effect_interval_and_p():
    a = Series("DefSent", {0: 45.0, 1: 45.5, 2: 44.8})
    b = Series("DefSent+", {0: 49.0, 1: 49.9, 2: 48.7})
    j = judge([a, b])
    diffs = [4.0, 4.4, 3.9]
    assert (j.verdict, j.holds, j.n) == ("holds", True, 3)
    assert j.effect == pytest.approx(statistics.mean(diffs))
    half = T_95_DF2 * statistics.stdev(diffs) / math.sqrt(3)
    assert (j.ci_low, j.ci_high) == (pytest.approx(j.effect - half, rel=1e-5), pytest.approx(j.effect + half, rel=1e-5))
    assert j.p < 0.001


def test_t_of_2_6_with_three_seeds_is_not_supported_and_a_reversed_effect_contradicted():
    # paired differences 0.5, 1.5, 2.5: mean 1.5, sd 1, t = 1.5 / (1 / sqrt 3) = 2.598 < 2.92
    a = Series("a", {0: 10.0, 1: 10.0, 2: 10.0})
    b = Series("b", {0: 10.5, 1: 11.5, 2: 12.5})
    j = judge([a, b])
    assert j.verdict == "not supported" and j.holds is False
    assert 0.05 < j.p < 0.1      # one-sided p of t = 2.598 on 2 df is about 0.061
    assert j.ci_low == pytest.approx(1.5 - T_95_DF2 / math.sqrt(3), rel=1e-5) and j.ci_low < 0 < j.ci_high
    # the same seeds the other way round: the interval still reaches 0, so not contradicted
    assert judge([b, a]).verdict == "not supported" and judge([b, a]).p > 0.9
    # an interval wholly below 0: the data say the opposite of the claim
    c = Series("c", {0: 8.0, 1: 8.2, 2: 7.9})
    worse = judge([a, c])
    assert worse.verdict == "contradicted" and worse.ci_high < 0 and worse.holds is False


def test_too_few_seeds_and_missing_figures_cannot_be_tested():
    j = judge([Series("mean", {0: 43.0, 1: 44.0}), Series("SBERT-WK", {0: 47.0, 1: 48.0})])
    assert j.verdict.startswith("cannot be tested here (too few seeds") and j.holds is None and j.p is None
    missing = judge([Series("a", {}), Series("b", {0: 1.0})])
    assert missing.verdict == "cannot be tested here (no figures for a)" and missing.n == 0
    assert judge([Series("a", {0: 1.0, 1: 2.0}), Series("b", {1: 3.0, 2: 9.0})]).n == 1  # only shared seeds pair
    with pytest.raises(ValueError):
        judge([Series("alone", {0: 1.0})])


def test_an_arm_at_chance_or_below_the_untrained_encoder_cannot_test_the_claim():
    a = Series("DefSent", {0: 34.0, 1: 34.2, 2: 34.4})
    b = Series("DefSent+", {0: 49.0, 1: 49.9, 2: 48.7})
    at_chance = Check("DefSent: word-prediction MRR@10", 0.0, chance=chance_mrr(30522, at=10))
    j = judge([a, b], [at_chance])
    assert j.verdict.startswith("cannot be tested here (an arm is not functional: DefSent") and j.p < 0.05
    assert j.p_holm is None   # not tested: outside the family Holm adjusts over
    below = Check("PST: STS-B dev at step 1", 40.0, chance=0.0, untrained=43.3)
    assert "not above the untrained" in judge([a, b], [below]).verdict
    assert judge([a, b], [Check("ok", 0.5, chance=0.1, untrained=0.2)]).verdict == "holds"


def test_holm_adjusts_over_the_claims_tested_together():
    from defsentflow.claims.judge import holm, judge_family

    # m = 4: sorted 0.01, 0.02, 0.03, 0.04 -> x4, x3, x2, x1 = 0.04, 0.06, 0.06, 0.04 -> monotone 0.04, 0.06, 0.06, 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([None, 0.5]) == [None, 0.5] and holm([]) == []
    assert holm([0.4, 0.5]) == [0.8, 0.8] and holm([0.9, 0.8]) == [1.0, 1.0]
    # a p of 0.02 holds alone, not beside three others (Holm: 0.02 x 4 = 0.08); the untested one is left out
    strong = judge([Series("a", {0: 10.0, 1: 10.0, 2: 10.0}), Series("b", {0: 11.0, 1: 12.9, 2: 12.6})])
    assert 0.01 < strong.p < 0.05 and strong.verdict == "holds"
    untested = judge([Series("a", {0: 1.0}), Series("b", {0: 2.0})])
    family = judge_family([strong, strong, strong, strong, untested])
    assert [j.p_holm for j in family[:4]] == [pytest.approx(min(1.0, 4 * strong.p))] * 4
    assert all(j.verdict == "not supported" for j in family[:4])
    assert family[4].verdict.startswith("cannot be tested here") and family[4].p_holm is None
    assert judge_family([strong])[0].verdict == "holds"


def test_chance_mrr_is_the_harmonic_number_over_n():
    assert chance_mrr(4) == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    assert chance_mrr(30522, at=10) == pytest.approx(2.9289683 / 30522)
    assert chance_mrr(3, at=10) == chance_mrr(3)


def test_series_side_by_side_share_their_decimals():
    from defsentflow.claims import series_text

    assert series_text([Series("step 1", {0: 0.02975, 1: 0.02975}), Series("step 3", {0: 0.115})]) == \
        "step 1 0.030 ± 0.000 vs step 3 0.115"
    assert series_text([Series("raw", {0: 0.00058}), Series("DefSent", {0: 0.00061})]) == "raw 0.00058 vs DefSent 0.00061"
    assert series_text([Series("a", {}), Series("b", {0: 49.654})]) == "a n/a vs b 49.65"


def test_an_ordered_claim_is_judged_on_every_step_not_its_ends():
    # the case: datasets c < b < a, 2k 48.92, 4k 49.98, 8k 49.72 (3 seeds): c -> a rises, b -> a falls
    c = Series("2000 entries", {0: 48.80, 1: 48.95, 2: 49.01})
    b = Series("4000 entries", {0: 49.80, 1: 50.02, 2: 50.12})
    a = Series("8000 entries", {0: 49.60, 1: 49.75, 2: 49.81})
    assert judge([c, a]).verdict == "holds"                    # the ends alone would say so
    j = judge([c, b, a])
    assert [(x.lower, x.higher) for x in j.pairs] == [("2000 entries", "4000 entries"), ("4000 entries", "8000 entries")]
    assert j.pairs[0].verdict() == "holds" and j.pairs[1].effect < 0
    assert j.verdict == "contradicted" and j.effect == pytest.approx(j.pairs[1].effect)  # the row shows that step
    # every step rising: holds; one flat step: not supported, the row showing the weakest step
    up = Series("a", {0: 51.0, 1: 51.2, 2: 51.3})
    assert judge([c, b, up]).verdict == "holds"
    flat = Series("a", {0: 49.9, 1: 49.9, 2: 50.2})
    weak = judge([c, b, flat])
    assert weak.verdict == "not supported" and weak.p == pytest.approx(weak.pairs[1].p)


def test_contradicted_is_holm_adjusted_like_holds():
    from defsentflow.claims.judge import judge_family

    a = Series("a", {0: 10.0, 1: 10.0, 2: 10.0})
    down = Series("b", {0: 9.0, 1: 7.1, 2: 7.4})   # the mirror of the "strong" case below: p_down about 0.02
    alone = judge([a, down])
    assert 0.01 < alone.pairs[0].p_down < 0.05 and alone.verdict == "contradicted"
    family = judge_family([alone] * 4)
    assert [j.pairs[0].p_down_holm for j in family] == [pytest.approx(4 * alone.pairs[0].p_down)] * 4
    assert all(j.verdict == "not supported" for j in family)
    # the pairs of an ordered claim are members of the family one by one: here 2 + 1 = 3 tests
    from defsentflow.claims.judge import holm

    c = Series("c", {0: 1.0, 1: 1.1, 2: 1.3})
    b = Series("b", {0: 3.0, 1: 3.3, 2: 3.4})
    top = Series("a", {0: 5.2, 1: 5.3, 2: 5.9})
    three = judge([c, b, top])
    fam = judge_family([three, alone])
    expected = holm([three.pairs[0].p, three.pairs[1].p, alone.pairs[0].p])
    assert [x.p_holm for x in fam[0].pairs] + [fam[1].pairs[0].p_holm] == pytest.approx(expected)
    assert fam[0].p_holm == pytest.approx(max(expected[:2]))   # the row: its weakest step


def test_an_arm_at_the_metrics_floor_cannot_test_and_says_what_the_floor_hides():
    raw = Series("raw encoder", {0: 0.0, 1: 0.0, 2: 0.0})
    trained = Series("DefSent", {0: 0.0, 1: 0.0, 2: 0.0})
    floor = Check("DefSent: word-prediction MRR@10", 0.0, chance=9.6e-5, floor=0.0,
                  detail="full-rank MRR: raw 0.00058, DefSent 0.0006, chance 0.00039")
    j = judge([raw, trained], [floor])
    assert j.verdict == ("cannot be tested here (an arm is not functional: DefSent: word-prediction MRR@10 0 at the "
                         "metric's floor 0 (full-rank MRR: raw 0.00058, DefSent 0.0006, chance 0.00039))")
