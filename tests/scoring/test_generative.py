from __future__ import annotations

import numpy as np
import pytest
import torch

from defsentflow.scoring import Context, GenerativeScorer


@pytest.fixture(scope="module")
def gen(tiny_gpt2_dir):
    return GenerativeScorer(tiny_gpt2_dir, batch_size=3)


def _slow_joint(gen, ids):
    """log p(ids | BOS), one token at a time, no padding."""
    seq = [gen.bos] + list(ids)
    total = 0.0
    with torch.no_grad():
        for t in range(1, len(seq)):
            logits = gen.model(input_ids=torch.tensor([seq[:t]])).logits[0, -1]
            total += torch.log_softmax(logits.double(), -1)[seq[t]].item()
    return total


CASES = [
    ("the cat is small .", Context(("a dog is big .",), ("the house is red .",))),
    ("water is clear .", Context((), ("fish live in the river .", "the sea is dark ."))),
    ("the king and the queen .", Context(("old man .",), ())),
    ("bird fly .", Context(("the sun light .", "day and night ."), ("tree plant green leaf .",))),
    ("read a book .", Context((), ())),
]


def test_terms_equal_slow_reference(gen):
    got = gen.terms([s for s, _ in CASES], [c for _, c in CASES])
    for (s, c), row in zip(CASES, got):
        a, b, d = gen._ids(" ".join(c.before)), gen._ids(s), gen._ids(" ".join(c.after))
        abc = _slow_joint(gen, a + b + d)
        exp = [
            (abc - _slow_joint(gen, a + d)) / len(b),
            (abc - _slow_joint(gen, b + d)) / len(a) if a else 0.0,
            (abc - _slow_joint(gen, a + b)) / len(d) if d else 0.0,
        ]
        np.testing.assert_allclose(row, exp, rtol=1e-4, atol=1e-4)


def test_batching_does_not_change_terms(gen):
    together = gen.terms([s for s, _ in CASES], [c for _, c in CASES])
    alone = np.concatenate([gen.terms([s], [c]) for s, c in CASES])
    np.testing.assert_allclose(together, alone, rtol=1e-5, atol=1e-5)


def test_empty_sides_give_zero_terms(gen):
    t = gen.terms(["read a book ."], [Context((), ())])
    assert t[0, 1] == 0.0 and t[0, 2] == 0.0 and t[0, 0] < 0


def test_score_is_sum_of_terms(gen):
    s, c = CASES[0]
    assert gen.score([s], [c])[0] == pytest.approx(gen.terms([s], [c]).sum(), rel=1e-6)
