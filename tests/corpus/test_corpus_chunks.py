from __future__ import annotations

import pytest

from defsentflow.corpus import CHUNKS_SCHEMA, SENTENCES_SCHEMA, build_tables, window_sizes


@pytest.mark.parametrize("n,k", [(1, 8), (8, 8), (9, 8), (17, 8), (20, 3), (5, 1)])
def test_window_sizes(n, k):
    sizes = window_sizes(n, k)
    assert sum(sizes) == n and max(sizes) <= k
    assert len(sizes) == -(-n // k) and max(sizes) - min(sizes) <= 1


def test_ids_and_positions():
    docs = ["d0", "d1"]
    seg = [
        [["a0", "a1"], ["a2"], [f"a{i}" for i in range(3, 13)]],  # 10-sentence paragraph -> 2 windows of 5
        [["b0"]],
    ]
    sents, chunks = build_tables(docs, seg, chunk_sentences=8)
    assert sents.schema == SENTENCES_SCHEMA and chunks.schema == CHUNKS_SCHEMA
    s = sents.to_pylist()
    assert [r["sentence_id"] for r in s] == list(range(14))
    assert [r["sent_idx"] for r in s if r["doc_id"] == "d0"] == list(range(13))
    assert [r["para_idx"] for r in s if r["doc_id"] == "d0"] == [0, 0, 1] + [2] * 10
    assert s[13] == {"sentence_id": 13, "doc_id": "d1", "para_idx": 0, "sent_idx": 0, "text": "b0"}
    c = chunks.to_pylist()
    assert [r["chunk_id"] for r in c] == list(range(5))
    assert [(r["first_sentence_id"], r["last_sentence_id"]) for r in c] == [(0, 1), (2, 2), (3, 7), (8, 12), (13, 13)]
    text_by_id = {r["sentence_id"]: r["text"] for r in s}
    for r in c:  # a chunk is its sentences joined, all from one document
        ids = range(r["first_sentence_id"], r["last_sentence_id"] + 1)
        assert r["text"] == " ".join(text_by_id[i] for i in ids)
        assert {s[i]["doc_id"] for i in ids} == {r["doc_id"]}
