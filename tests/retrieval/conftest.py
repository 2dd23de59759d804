from __future__ import annotations

import numpy as np
import pytest

_WORDS = ("the a of cat dog sat mat ran fast slow red blue green house tree river sea king queen city road car book "
          "page word light dark sun moon star bird fish water fire stone gold silver iron wood glass").split()


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(_WORDS) + 1)  # Zipf: "the", "a" in most documents -> negative idf
    p /= p.sum()
    return [" ".join(rng.choice(_WORDS, size=rng.integers(3, 25), p=p)).capitalize() + "." for _ in range(n)]


@pytest.fixture(scope="session")
def small_docs() -> list[str]:
    """300 short synthetic documents with Zipfian word frequencies and many tied scores."""
    return _texts(300, 0)


@pytest.fixture(scope="session")
def small_queries() -> list[str]:
    return _texts(60, 1) + ["the the cat", "unknownword", "", "Cat, DOG; sat!"]
