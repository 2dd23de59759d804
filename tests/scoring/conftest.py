"""Fixtures for the scoring tests: a small synthetic corpus and a tiny GPT-2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import WORDS
from tests.scoring.helpers import make_corpus


@pytest.fixture(scope="session")
def corpus_tables():
    return make_corpus()


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A 1-layer, 32-wide random GPT2LMHeadModel and a word-level fast tokenizer with BOS/EOS/PAD."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-gpt2")
    vocab = ["<|endoftext|>", "[UNK]", "[PAD]"] + list(dict.fromkeys(WORDS)) + list(".,;:!?")
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   pad_token="[PAD]", unk_token="[UNK]")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(vocab), n_layer=1, n_embd=32, n_head=2, n_positions=256, bos_token_id=0,
                     eos_token_id=0, pad_token_id=2)
    GPT2LMHeadModel(cfg).save_pretrained(path)
    fast.save_pretrained(path)
    return path
