"""Entry-space statistics on matrices whose answer is known, and against sklearn / slow loops."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.metrics.pairwise import cosine_similarity

from defsentflow.entryspace.isotropy import (
    avg_cosine,
    effective_rank,
    entry_space_stats,
    isoscore,
    isoscore_from_variances,
    partition_isotropy,
    top1_var_share,
)


def _isoscore_paper(points: np.ndarray) -> float:
    """Rudman et al.'s steps, literally: sklearn PCA, per-coordinate variance, defect, IsoScore."""
    n_dim = points.shape[1]
    rotated = PCA(n_components=n_dim).fit_transform(points)
    var = np.var(rotated, axis=0, ddof=1)
    var_hat = np.sqrt(n_dim) * var / np.linalg.norm(var)
    defect = np.linalg.norm(var_hat - np.ones(n_dim)) / np.sqrt(2 * (n_dim - np.sqrt(n_dim)))
    k = (n_dim - defect**2 * (n_dim - np.sqrt(n_dim))) ** 2 / n_dim
    return (n_dim * (k / n_dim) - 1) / (n_dim - 1)


def test_isoscore_extremes_and_known_values():
    assert isoscore_from_variances(np.ones(10)) == pytest.approx(1.0)
    assert isoscore_from_variances(np.eye(10)[0]) == pytest.approx(0.0, abs=1e-12)
    # variance spread evenly over k of d axes: IsoScore = (k - 1) / (d - 1) (the paper's Theorem)
    for k in (2, 5, 8):
        assert isoscore_from_variances(np.r_[np.ones(k), np.zeros(10 - k)]) == pytest.approx((k - 1) / 9)


def test_isotropic_gaussian_scores_high_rank_one_scores_low():
    rng = np.random.default_rng(0)
    gauss = rng.normal(size=(5000, 16))
    assert isoscore(gauss) > 0.95
    rank1 = np.outer(rng.normal(size=2000), rng.normal(size=16))
    assert isoscore(rank1) < 0.01
    assert top1_var_share(rank1) == pytest.approx(1.0)
    assert effective_rank(rank1) == pytest.approx(1.0, abs=1e-3)
    anis = gauss * np.r_[10.0, np.ones(15)]
    assert 0.01 < isoscore(anis) < 0.9


def test_isoscore_matches_the_papers_steps_and_ignores_translation_and_scale():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 12)) @ rng.normal(size=(12, 12))
    assert isoscore(x) == pytest.approx(_isoscore_paper(x), abs=1e-9)
    assert isoscore(3.0 * x + 7.0) == pytest.approx(isoscore(x), abs=1e-9)


def test_avg_cosine_and_top1_share_against_sklearn():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(120, 6)) + 2.0
    cos = cosine_similarity(x)
    exact = cos[np.triu_indices(len(x), 1)].mean()
    assert avg_cosine(x, n_pairs=10**6) == pytest.approx(exact, abs=1e-12)  # all pairs when few
    assert avg_cosine(x, n_pairs=50_000, seed=3) == pytest.approx(exact, abs=0.01)  # sampled
    assert top1_var_share(x) == pytest.approx(PCA().fit(x).explained_variance_ratio_[0], abs=1e-10)


def test_partition_isotropy_against_the_definition():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 5)) * 0.3
    _, vecs = np.linalg.eigh(x.T @ x)
    z = [np.exp(x @ vecs[:, i]).sum() for i in range(5)]
    assert partition_isotropy(x) == pytest.approx(min(z) / max(z), rel=1e-9)
    shifted = x + 3.0  # a common offset makes the space anisotropic: the ratio collapses
    assert partition_isotropy(shifted) < 0.01 < partition_isotropy(x)


def test_effective_rank_of_k_equal_directions_is_k():
    rng = np.random.default_rng(4)
    q, _ = np.linalg.qr(rng.normal(size=(10, 10)))
    # k orthogonal directions with equal spread: +/- each basis vector
    pts = np.concatenate([np.stack([q[:, i], -q[:, i]]) for i in range(4)])
    assert effective_rank(pts) == pytest.approx(4.0, rel=1e-6)


def test_entry_space_stats_keys_and_bad_input():
    stats = entry_space_stats(np.random.default_rng(5).normal(size=(50, 4)))
    assert set(stats) == {"n_entries", "dim", "avg_cosine", "top1_var_share", "isoscore", "partition_isotropy",
                          "effective_rank", "mean_norm"}
    assert stats["n_entries"] == 50 and stats["dim"] == 4
    with pytest.raises(ValueError, match="2-D"):
        entry_space_stats(np.ones(5))
    with pytest.raises(ValueError, match="NaN"):
        entry_space_stats(np.full((3, 3), np.nan))
