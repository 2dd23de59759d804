"""Fixtures for the training tests: a toy dictionary and a tiny RoBERTa MLM checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

# (entry, definition) pairs over the tiny tokenizer's word list; every entry is one token.
TOY_PAIRS = [
    ("cat", "a small animal that lives in the house"),
    ("cat", "a small animal with a tail"),
    ("dog", "a large animal that lives with people"),
    ("dog", "an animal that can run fast"),
    ("water", "a clear liquid to drink"),
    ("water", "the liquid in a river or sea"),
    ("apple", "a red round fruit"),
    ("apple", "a sweet fruit from a tree"),
    ("king", "a man who is the ruler of a country"),
    ("queen", "a woman who is the ruler of a country"),
    ("book", "pages of words to read"),
    ("car", "a vehicle you drive on a road"),
    ("bird", "an animal with a wing that can fly"),
    ("tree", "a large green plant"),
    ("sun", "the light of the day"),
    ("night", "the dark time after the day"),
]


@pytest.fixture()
def toy_pairs() -> list[tuple[str, str]]:
    return list(TOY_PAIRS)


@pytest.fixture(scope="session")
def tiny_roberta_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide random RobertaForMaskedLM (the tiny BERT word-piece tokenizer beside it)."""
    import torch
    from transformers import BertTokenizer, RobertaConfig, RobertaForMaskedLM

    from tests.conftest import WORDS

    path = tmp_path_factory.mktemp("tiny-roberta")
    torch.manual_seed(1)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(dict.fromkeys(WORDS))
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    cfg = RobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=130, pad_token_id=0, bos_token_id=2,
                        eos_token_id=3, type_vocab_size=1)
    RobertaForMaskedLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path
