from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics.pairwise import cosine_similarity

from defsentflow.scoring import ScoreCache, pair_similarities


def _score(s, c):
    """A deterministic, non-trivial stand-in for S(s, c)."""
    s, c = np.asarray(s, dtype=np.float64), np.asarray(c, dtype=np.float64)
    return (-np.abs(np.sin(s * 1.3 + c * 0.7)) - 0.01 * ((s * 7 + c * 3) % 11)).astype(np.float32)


@pytest.fixture()
def sets():
    rng = np.random.default_rng(0)
    return {s: rng.choice(200, size=rng.integers(1, 9), replace=False) for s in range(30)}


def test_equals_a_slow_loop(sets):
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, 30, size=(200, 2))
    got = pair_similarities(pairs, sets, ScoreCache("v"), _score)
    for (a, b), sim in zip(pairs.tolist(), got):
        C = list(sets[a]) + list(sets[b])
        v1 = [float(_score([a], [c])[0]) for c in C]
        v2 = [float(_score([b], [c])[0]) for c in C]
        assert sim == pytest.approx(cosine_similarity([v1], [v2])[0, 0], abs=1e-5)


def test_centered_is_pearson(sets):
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    got = pair_similarities(pairs, sets, ScoreCache("v"), _score, center=True)
    for (a, b), sim in zip(pairs.tolist(), got):
        C = np.concatenate([sets[a], sets[b]])
        if len(C) > 2:
            assert sim == pytest.approx(pearsonr(_score(np.full(len(C), a), C), _score(np.full(len(C), b), C))[0], abs=1e-5)


def test_cache_scores_each_key_once_and_then_needs_no_scorer(sets):
    calls = []

    def counting(s, c):
        calls.append(len(s))
        return _score(s, c)

    cache = ScoreCache("v")
    pairs = np.array([[0, 1], [1, 2], [0, 2], [0, 1]])
    first = pair_similarities(pairs, sets, cache, counting)
    keys = {(s, int(c)) for a, b in pairs.tolist() for s in (a, b) for c in np.concatenate([sets[a], sets[b]])}
    assert sum(calls) == len(keys) == len(cache)
    again = pair_similarities(pairs, sets, cache)  # everything cached: no scorer needed
    np.testing.assert_array_equal(first, again)
    with pytest.raises(KeyError):
        pair_similarities(np.array([[5, 6]]), sets, cache)


def test_cache_lookup_add_and_round_trip(tmp_path):
    cache = ScoreCache("v1")
    cache.add(np.array([3, 1]), np.array([7, 9]), np.array([0.5, -1.0]))
    cache.add(np.array([3]), np.array([7]), np.array([99.0]))  # existing key keeps its value
    found, vals = cache.lookup(np.array([1, 3, 2]), np.array([9, 7, 7]))
    assert found.tolist() == [True, True, False]
    assert vals[:2].tolist() == [-1.0, 0.5] and np.isnan(vals[2])
    cache.save(tmp_path / "s.parquet")
    back = ScoreCache.load("v1", [tmp_path / "s.parquet"])
    assert back.lookup(np.array([3]), np.array([7]))[1].tolist() == [0.5]
    # large ids do not collide
    big = ScoreCache("v")
    big.add(np.array([2**31 - 1, 0]), np.array([0, 2**31 - 1]), np.array([1.0, 2.0]))
    assert big.lookup(np.array([0, 2**31 - 1]), np.array([2**31 - 1, 0]))[1].tolist() == [2.0, 1.0]


def test_throughput_with_warm_cache(sets):
    rng = np.random.default_rng(2)
    big_sets = {s: rng.choice(5000, size=100, replace=False) for s in range(400)}
    pairs = rng.integers(0, 400, size=(4000, 2))
    cache = ScoreCache("v")
    pair_similarities(pairs, big_sets, cache, _score)
    import time

    t0 = time.perf_counter()
    pair_similarities(pairs, big_sets, cache)
    rate = len(pairs) / (time.perf_counter() - t0)
    assert rate > 1000, f"{rate:.0f} pairs/s with a warm cache"
