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


def test_byte_level_bpe_targets_read_the_word_as_inside_a_sentence():
    """RoBERTa's targets as DefSent's reference builds them (add_prefix_space=True): 'Ġdog', one token."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["the zebra sat on a mat with a dog"] * 20, vocab_size=300, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = RobertaTokenizerFast(tokenizer_object=bpe._tokenizer, add_prefix_space=False)
    assert len(tok("dog", add_special_tokens=False)["input_ids"]) == 2   # as a text's first word: 'do', 'g'
    mask, ids = single_token_targets(tok, ["zebra", "dog", "cat"])
    assert mask.tolist() == [True, True, False]
    assert ids[:2].tolist() == [tok(f" {w}", add_special_tokens=False)["input_ids"][0] for w in ("zebra", "dog")]


def test_defsent_reads_a_roberta_definition_with_its_leading_space(tmp_path):
    """DefSent's reference tokenizes definitions with add_prefix_space=True too: a byte-level BPE then reads
    a definition's first word as its target ('Ġdog'); the model is saved with that tokenizer. WordPiece is left alone."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoTokenizer, BertTokenizer, RobertaTokenizerFast

    from defsentflow.training.loop import defsent_tokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["the zebra sat on a mat with a dog"] * 20, vocab_size=300, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    RobertaTokenizerFast(tokenizer_object=bpe._tokenizer, add_prefix_space=False).save_pretrained(tmp_path)
    plain = AutoTokenizer.from_pretrained(tmp_path)
    tok = defsent_tokenizer(plain, tmp_path)
    first = tok("dog on a mat", add_special_tokens=False)["input_ids"][0]
    assert first == single_token_targets(plain, ["dog"])[1][0] != plain("dog on a mat", add_special_tokens=False)["input_ids"][0]
    wordpiece = BertTokenizer(vocab={w: i for i, w in enumerate(["[PAD]", "[UNK]", "dog"])})
    assert defsent_tokenizer(wordpiece, tmp_path) is wordpiece


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


def test_defsent_caps_its_entries_after_the_single_token_filter(tiny_bert_dir):
    """DefSent's max_train_entries counts entries it can predict: the cap is taken among single-token entries
    (capped first, two of these three would be lost to the filter, issue 57)."""
    import pyarrow as pa

    from defsentflow.training.data import _from_table

    words = ["dog", "small dog", "zebra", "cat", "big cat", "house"]
    table = pa.table({"entry": words, "definition": [f"a gloss of {w}" for w in words], "split": ["train"] * 6})
    kept = _from_table(table, "toy", 2, ("train",), variant=None, source=None, single_token_of=tiny_bert_dir)
    assert len(kept.entries) == 2 and set(kept.entries) <= {"dog", "cat", "house"}
    assert kept.single_token_of == tiny_bert_dir
    every = _from_table(table, "toy", None, ("train",), variant=None, source=None, single_token_of=tiny_bert_dir)
    assert every.entries == ["cat", "dog", "house"]
    plain = _from_table(table, "toy", None, ("train",), variant=None, source=None)
    assert len(plain.entries) == 6 and plain.train_hash != every.train_hash
