from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from defsentflow.corpus import read_documents


def _write_text_dir(root):
    d = root / "news"
    (d / "sport").mkdir(parents=True)
    (d / "sport" / "001.txt").write_text("Title one\n\nFirst paragraph. Second sentence.\n", encoding="utf-8")
    (d / "sport" / "002.txt").write_bytes(b"Title two\n\nA \xa315m signing.\n\nClean line.\n")  # Latin-1 pound sign
    (d / "sport" / "003.txt").write_text("   \n\n", encoding="utf-8")  # empty
    os.symlink(d / "missing-target.txt", d / "sport" / "004.txt")  # unreadable: a broken link
    (d / "README.TXT").write_text("About this corpus.", encoding="utf-8")
    (d / "notes.csv").write_text("a,b", encoding="utf-8")
    return d


def test_text_dir_quarantine_and_repair(tmp_path):
    res = read_documents([_write_text_dir(tmp_path)])
    assert [d.doc_id for d in res.documents] == ["news/sport/001.txt", "news/sport/002.txt"]
    assert "\ufffd15m signing" in res.documents[1].text
    by_file = {os.path.basename(q.file): q for q in res.quarantine}
    assert set(by_file) == {"002.txt", "003.txt", "004.txt"}
    repaired = by_file["002.txt"]
    assert not repaired.rejected and repaired.line == 3 and "invalid UTF-8" in repaired.reason and "\\xa3" in repaired.raw
    assert by_file["003.txt"].rejected and by_file["003.txt"].reason == "empty file"
    assert by_file["004.txt"].rejected and by_file["004.txt"].reason.startswith("unreadable file")
    assert (res.rejected, res.repaired) == (2, 1)
    assert any(s.endswith("README.TXT") for s in res.skipped) and any(s.endswith("notes.csv") for s in res.skipped)


def test_jsonl_records(tmp_path):
    f = tmp_path / "docs.jsonl"
    lines = [
        json.dumps({"text": "Alpha doc. Two.", "id": "a"}),
        "{not json",
        json.dumps({"id": "b"}),
        json.dumps({"text": "  "}),
        "",
        json.dumps({"text": "No id here."}),
        json.dumps({"text": "Same id again.", "id": "a"}),
        json.dumps(["a list"]),
    ]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = read_documents([f])
    assert [(d.doc_id, d.text) for d in res.documents] == [("a", "Alpha doc. Two."), ("docs.jsonl:6", "No id here.")]
    reasons = {(q.line, q.reason.split(":")[0].split(" (")[0]) for q in res.quarantine}
    assert reasons == {(2, "invalid JSON"), (3, "missing 'text'"), (4, "empty 'text'"), (None, "duplicate doc_id 'a'"),
                       (8, "record is a list, not an object with 'text'")}
    assert res.rejected == 5


def test_parquet(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"text": ["One doc.", None, "Two doc."], "id": [1, 2, 3]}), good)
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"body": ["x"]}), bad)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    res = read_documents([good, bad, broken])
    assert [(d.doc_id, d.text) for d in res.documents] == [("1", "One doc."), ("3", "Two doc.")]
    reasons = sorted((os.path.basename(q.file), q.line, q.reason.split(" (")[0].split(":")[0]) for q in res.quarantine)
    assert reasons == [("bad.parquet", None, "no 'text' column"), ("broken.parquet", None, "unreadable Parquet"),
                       ("good.parquet", 2, "missing 'text'")]


def test_missing_source_and_bad_format(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        read_documents([tmp_path / "nowhere"])
    with pytest.raises(ValueError, match="valid: auto, text, jsonl, parquet"):
        read_documents([tmp_path], fmt="csv")


def test_explicit_format_and_gutenberg_in_text(tmp_path):
    f = tmp_path / "book"  # no suffix: text
    f.write_text("licence\n*** START OF THE PROJECT GUTENBERG EBOOK B ***\nThe book.\n*** END OF THE PROJECT GUTENBERG EBOOK B ***\nmore licence")
    res = read_documents([f])
    assert [(d.doc_id, d.text) for d in res.documents] == [("book", "The book.")]
