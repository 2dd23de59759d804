from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.scoring import Context, CorpusLayout, context_vectors, jaccard, word_set


def _tables(doc_sizes, chunk_spans):
    texts, docs = [], []
    for d, n in enumerate(doc_sizes):
        for i in range(n):
            texts.append(f"d{d} s{i}")
            docs.append(f"doc{d}")
    sentences = pa.table({"sentence_id": pa.array(range(len(texts)), pa.int64()), "doc_id": docs,
                          "para_idx": pa.array([0] * len(texts), pa.int32()),
                          "sent_idx": pa.array([int(t.split("s")[-1]) for t in texts], pa.int32()), "text": texts})
    chunks = pa.table({"chunk_id": pa.array(range(len(chunk_spans)), pa.int64()),
                       "doc_id": [docs[a] for a, _ in chunk_spans],
                       "first_sentence_id": pa.array([a for a, _ in chunk_spans], pa.int64()),
                       "last_sentence_id": pa.array([b for _, b in chunk_spans], pa.int64()),
                       "text": ["" for _ in chunk_spans]})
    return sentences, chunks


@pytest.fixture()
def layout():
    # doc0: 5 sentences (chunks [0,1], [2,4]); doc1: 1 sentence; doc2: 3 sentences (one chunk)
    return CorpusLayout.from_tables(*_tables([5, 1, 3], [(0, 1), (2, 4), (5, 5), (6, 8)]))


def _slow_context(texts, docs, i, k):
    before = [texts[j] for j in range(i - 1, i - k - 1, -1) if j >= 0 and docs[j] == docs[i]][::-1]
    after = [texts[j] for j in range(i + 1, i + k + 1) if j < len(texts) and docs[j] == docs[i]]
    return Context(tuple(before), tuple(after))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_contexts_stop_at_document_edges(layout, k):
    docs = [t.split()[0] for t in layout.texts]
    for i in range(layout.n_sentences):
        assert layout.context(i, k) == _slow_context(layout.texts, docs, i, k), (i, k)


def test_edge_cases_by_hand(layout):
    assert layout.context(0, 1) == Context((), ("d0 s1",))  # document start
    assert layout.context(4, 1) == Context(("d0 s3",), ())  # document end
    assert layout.context(5, 2) == Context((), ())  # a one-sentence document
    assert layout.context(6, 2) == Context((), ("d2 s1", "d2 s2"))  # never crosses into doc1
    # a slot at a chunk's edge still sees the neighbouring chunk of its document
    assert layout.context(2, 1) == Context(("d0 s1",), ("d0 s3",))


def test_slots_are_every_sentence_of_each_chunk(layout):
    ids, owner = layout.slots([1, 3, 0])
    assert ids.tolist() == [2, 3, 4, 6, 7, 8, 0, 1]
    assert owner.tolist() == [1, 1, 1, 3, 3, 3, 0, 0]
    assert layout.chunk_of.tolist() == [0, 0, 1, 1, 1, 2, 3, 3, 3]


def test_previous_sentence(layout):
    assert layout.previous_sentence(0) == ""
    assert layout.previous_sentence(3) == "d0 s2"
    assert layout.previous_sentence(6) == ""


def test_layout_rejects_bad_tables():
    s, c = _tables([2, 2], [(0, 1), (2, 3)])
    with pytest.raises(ValueError, match="one document"):
        CorpusLayout.from_tables(s, _tables([2, 2], [(1, 2)])[1])
    shuffled = s.take([0, 2, 1, 3]).set_column(0, "sentence_id", pa.array(range(4), pa.int64()))
    with pytest.raises(ValueError, match="consecutive"):
        CorpusLayout.from_tables(shuffled, c)
    with pytest.raises(ValueError, match="dense"):
        CorpusLayout.from_tables(s.set_column(0, "sentence_id", pa.array([0, 1, 2, 5], pa.int64())), c)


@pytest.mark.parametrize("k", [1, 2])
def test_context_vectors_are_side_means(layout, k):
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(layout.n_sentences, 4)).astype(np.float32)
    ids = np.arange(layout.n_sentences)
    left, right = context_vectors(layout, vecs, ids, k)
    for i in ids:
        ls, le, rs, re_ = (int(x[0]) for x in layout.context_bounds(np.array([i]), k))
        exp_l = vecs[ls:le].mean(0) if le > ls else np.zeros(4)
        exp_r = vecs[rs:re_].mean(0) if re_ > rs else np.zeros(4)
        np.testing.assert_allclose(left[i], exp_l, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(right[i], exp_r, rtol=1e-6, atol=1e-6)


def test_jaccard():
    a, b = word_set("The cat sat."), word_set("the cat ran")
    assert a == frozenset({"the", "cat", "sat"})
    assert jaccard(a, b) == pytest.approx(2 / 4)
    assert jaccard(frozenset(), frozenset()) == 0.0
