"""DefSent targets and checkpoint RNG round trips."""

from __future__ import annotations

import random

import numpy as np
import torch

from defsentflow.training import single_token_targets
from defsentflow.training.checkpoint import capture_rng, load_checkpoint, restore_rng, save_checkpoint


def test_single_token_targets(tiny_bert_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    mask, ids = single_token_targets(tok, ["dog", "small dog", "zebra", "Cat"])
    # "zebra" splits into letters; "Cat" is lower-cased by the uncased tokenizer.
    assert mask.tolist() == [True, False, False, True]
    assert ids.tolist() == [tok.convert_tokens_to_ids("dog"), -1, -1, tok.convert_tokens_to_ids("cat")]
    mask, ids = single_token_targets(tok, [])
    assert mask.shape == ids.shape == (0,)


def test_rng_round_trip_through_a_checkpoint(tmp_path):
    torch.manual_seed(3), np.random.seed(3), random.seed(3)
    save_checkpoint(tmp_path, {"rng": capture_rng(), "step": 1})
    expected = (torch.rand(3), np.random.rand(3), random.random())
    torch.manual_seed(99), np.random.seed(99), random.seed(99)
    state = load_checkpoint(tmp_path)
    restore_rng(state["rng"])
    got = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(got[0], expected[0]) and np.array_equal(got[1], expected[1]) and got[2] == expected[2]
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]
    assert load_checkpoint(tmp_path / "none") is None
