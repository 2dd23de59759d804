from __future__ import annotations

from defsentflow.dictionary import DictionaryConfig, SourceSpec, ingest_dictionary, load_dictionary, whole_token_filter
from defsentflow.dictionary.variants import tokenizer_id

ENTRIES = ["dog", "Cat", "zebra", "big house", "walk", "xylophone", "the"]


def test_whole_token_filter_is_vocabulary_membership(tiny_bert_dir):
    from tests.conftest import WORDS

    keep = whole_token_filter(str(tiny_bert_dir))(ENTRIES)
    # The tiny tokenizer's vocabulary is WORDS (+ letters); it lower-cases.
    assert keep == [e.lower() in WORDS for e in ENTRIES]


def test_variant_c_keeps_only_whole_token_entries(tiny_bert_dir, home, write):
    from tests.conftest import WORDS

    path = write("d.tsv", "".join(f"{e}\tmeaning {i} of {e}\n" for i, e in enumerate(ENTRIES)))
    cfg = DictionaryConfig(name="vc", sources=[SourceSpec(kind="tsv", paths=[str(path)])], variant="c",
                           tokenizer=str(tiny_bert_dir))
    res = ingest_dictionary(cfg)
    kept = set(load_dictionary("vc").column("entry").to_pylist())
    assert kept == {e.lower() for e in ENTRIES if e.lower() in WORDS}
    s = res.summary
    assert s["excluded"] == len(ENTRIES) - len(kept) and s["read"] == s["accepted"] + s["excluded"]
    # The tokenizer is part of the key: same data, variant a, another key.
    other = ingest_dictionary(DictionaryConfig(name="va", sources=(SourceSpec(kind="tsv", paths=(str(path),)),)))
    assert other.key != res.key and other.summary["entries"] == len(ENTRIES)


def test_tokenizer_id_follows_the_vocabulary_files(tiny_bert_dir, tmp_path):
    import shutil

    copy = tmp_path / "tok"
    shutil.copytree(tiny_bert_dir, copy)
    assert tokenizer_id(str(copy)) == tokenizer_id(str(tiny_bert_dir))
    with open(copy / "vocab.txt", "a") as fh:
        fh.write("newword\n")
    assert tokenizer_id(str(copy)) != tokenizer_id(str(tiny_bert_dir))
    assert tokenizer_id("bert-base-uncased") == "name:bert-base-uncased"
