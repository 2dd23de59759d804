from __future__ import annotations

import os

import pytest

from defsentflow.corpus import (
    CHUNKS_SCHEMA,
    SENTENCES_SCHEMA,
    corpus_key,
    ingest_corpus,
    load_chunks,
    load_sentences,
)
from defsentflow.storage import Catalog


def _corpus(root):
    d = root / "mini"
    d.mkdir()
    (d / "a.txt").write_text("Headline A\n\nDr. Smith arrived on Monday. He left on Tuesday.\n\nA second paragraph here.\n")
    (d / "b.txt").write_bytes(b"Headline B\n\nPrice: \xa35. That is cheap.\n")
    (d / "c.txt").write_text("")
    return d


def test_ingest_writes_tables_and_catalog(home, tmp_path):
    src = _corpus(tmp_path)
    res = ingest_corpus([src], "mini", workers=1)
    assert not res.cached
    sents, chunks = load_sentences("mini"), load_chunks(res.key)
    assert sents.schema == SENTENCES_SCHEMA and chunks.schema == CHUNKS_SCHEMA
    rows = sents.to_pylist()
    assert [r["text"] for r in rows if r["doc_id"] == "mini/a.txt"] == [
        "Headline A", "Dr. Smith arrived on Monday.", "He left on Tuesday.", "A second paragraph here."]
    assert [(r["para_idx"], r["sent_idx"]) for r in rows if r["doc_id"] == "mini/a.txt"] == [(0, 0), (1, 1), (1, 2), (2, 3)]
    assert [r["sentence_id"] for r in rows] == list(range(len(rows)))
    assert chunks.num_rows == 5  # one per paragraph

    (row,) = Catalog().query("SELECT * FROM corpora WHERE name = 'mini'")
    assert (row["documents"], row["quarantined"], row["documents_read"], row["repaired"]) == (2, 1, 3, 1)
    assert (row["sentences"], row["chunks"], row["paragraphs"]) == (sents.num_rows, chunks.num_rows, 5)
    q = Catalog().query("SELECT file, line, reason FROM quarantine WHERE dataset = 'mini' ORDER BY file")
    assert [(os.path.basename(r["file"]), r["line"]) for r in q] == [("b.txt", 3), ("c.txt", None)]
    assert Catalog().artifact(res.key)["kind"] == "corpus"


def test_same_input_is_a_cache_hit(home, tmp_path):
    src = _corpus(tmp_path)
    first = ingest_corpus([src], "mini", workers=1)
    assert corpus_key([src], "mini") == first.key
    stamp = {p.name: p.stat().st_mtime_ns for p in first.path.iterdir()}
    again = ingest_corpus([src], "mini", workers=1)
    assert again.cached and again.key == first.key and again.sentences == first.sentences
    assert {p.name: p.stat().st_mtime_ns for p in again.path.iterdir()} == stamp
    (src / "a.txt").write_text("Changed text. Now different.\n")
    changed = ingest_corpus([src], "mini", workers=1)
    assert not changed.cached and changed.key != first.key
    assert load_sentences("mini").num_rows == changed.sentences  # the name resolves to the newest


def test_nothing_usable_writes_nothing(home, tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    (d / "x.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="no usable document"):
        ingest_corpus([d], "empty")
    with pytest.raises(FileNotFoundError):
        ingest_corpus([tmp_path / "missing"], "gone")
    with pytest.raises(ValueError, match="invalid corpus name"):
        ingest_corpus([d], "../evil")
    assert not (home / "parquet" / "corpora").exists()
    assert Catalog().query("SELECT count(*) AS n FROM corpora")[0]["n"] == 0


def test_embedded_sample(home):
    from defsentflow.storage import sample_dir

    res = ingest_corpus([sample_dir() / "corpus" / "pride-and-prejudice-sample.txt"], "pride-sample", workers=1)
    first = load_sentences("pride-sample").slice(0, 6).column("text").to_pylist()
    assert first[:3] == ["PRIDE AND PREJUDICE", "By Jane Austen", "Chapter 1"]
    assert first[3] == ("It is a truth universally acknowledged, that a single man in possession "
                        "of a good fortune, must be in want of a wife.")
    assert res.documents == 1 and res.sentences > 500
