"""ICA above 200k entries is fitted on a seeded sample; below, on the whole matrix."""

from __future__ import annotations

import numpy as np

from defsentflow.model import ica
from defsentflow.model.ica import IcaTransform


def test_large_matrices_fit_ica_on_a_seeded_sample(monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.laplace(size=(400, 4)) @ rng.normal(size=(4, 4))).astype(np.float32)
    whole = IcaTransform.fit(x, max_iter=200)
    monkeypatch.setattr(ica, "ICA_SAMPLE_ABOVE", 300)
    monkeypatch.setattr(ica, "ICA_SAMPLE", 200)
    sampled = IcaTransform.fit(x, max_iter=200)
    rows = np.sort(np.random.default_rng(42).choice(400, size=200, replace=False))
    np.testing.assert_array_equal(sampled.unmixing, IcaTransform.fit(x[rows], max_iter=200).unmixing)
    assert not np.allclose(sampled.unmixing, whole.unmixing)
    assert sampled(x).shape == x.shape
