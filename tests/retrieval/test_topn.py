from __future__ import annotations

import numpy as np
import pytest

from defsentflow.retrieval import rank_order, top_n_rows


@pytest.mark.parametrize("seed", range(5))
def test_top_n_equals_full_sort_with_ties(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 5, size=(40, 60)).astype(np.float64)  # many ties
    scores[0] = 0.0
    for n in (1, 3, 10, 59, 60, 100):
        ids, top = top_n_rows(scores, n)
        assert ids.shape == (40, min(n, 60))
        for r in range(40):
            expected = rank_order(scores[r])[:n]
            assert ids[r].tolist() == expected.tolist()
            assert np.array_equal(top[r], scores[r, expected])


def test_rank_order_is_score_desc_then_id():
    assert rank_order(np.array([1.0, 3.0, 1.0, 3.0, 2.0])).tolist() == [1, 3, 4, 0, 2]
