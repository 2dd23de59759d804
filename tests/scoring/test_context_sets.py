from __future__ import annotations

import numpy as np
import pytest

from defsentflow.scoring import jaccard, select_context_set, word_set
from defsentflow.scoring.context_sets import previous_word_matrix


def _words(prev: dict[int, str]):
    return lambda cid: word_set(prev.get(cid, ""))


def test_one_context_per_chunk():
    cids = np.array([10, 11, 12, 20, 21, 30])
    chunks = np.array([1, 1, 1, 2, 2, 3])
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.95, 0.1])
    prev = {c: f"unique words {c} alpha{c} beta{c}" for c in cids}
    got = select_context_set(cids, chunks, scores, 10, previous_words=_words(prev))
    assert got.tolist() == [21, 10, 30]  # best of each chunk, best first


def test_jaccard_rule_on_previous_sentence():
    cids = np.array([1, 2, 3, 4])
    chunks = np.array([0, 1, 2, 3])
    scores = np.array([4.0, 3.0, 2.0, 1.0])
    prev = {1: "the cat sat on the mat", 2: "the cat sat on a mat",  # J = 5/6 >= 0.5: rejected
            3: "dogs bark at night", 4: "the cat sat near dogs"}  # J(4,1) = 3/7 < 0.5, J(4,3) = 1/8
    got = select_context_set(cids, chunks, scores, 10, previous_words=_words(prev), max_jaccard=0.5)
    assert got.tolist() == [1, 3, 4]
    assert jaccard(word_set(prev[1]), word_set(prev[2])) >= 0.5
    # exactly at the threshold is rejected ("must be below")
    prev2 = {1: "a b c d", 2: "a b e f"}  # J = 2/6
    got = select_context_set(np.array([1, 2]), np.array([0, 1]), np.array([1.0, 0.5]), 5,
                             previous_words=_words(prev2), max_jaccard=2 / 6)
    assert got.tolist() == [1]


def test_document_start_slots_do_not_conflict():
    # empty c_{i-1} (a slot at a document's start) blocks nothing and is blocked by nothing
    got = select_context_set(np.array([5, 6, 7]), np.array([0, 1, 2]), np.array([3.0, 2.0, 1.0]), 5,
                             previous_words=_words({7: "x y"}))
    assert got.tolist() == [5, 6, 7]


def test_stops_at_size_and_breaks_ties_by_id():
    cids = np.array([9, 3, 7, 1])
    got = select_context_set(cids, np.arange(4), np.zeros(4), 3, previous_words=_words({}))
    assert got.tolist() == [1, 3, 7]


def _reference(cids, chunks, scores, size, prev, max_jaccard):
    """The slow reference: sort by (-score, id), scan, skip a used chunk or a too-similar context."""
    chosen, used = [], set()
    for _, c, ch in sorted(zip(-scores, cids.tolist(), chunks.tolist())):
        if len(chosen) == size:
            break
        w = word_set(prev[c])
        if ch in used or (w and any(jaccard(w, word_set(prev[x])) >= max_jaccard for x in chosen)):
            continue
        chosen.append(c)
        used.add(ch)
    return chosen


def test_matches_a_slow_reference():
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(8)]
    for trial in range(20):
        n = 40
        cids = rng.permutation(1000)[:n]
        chunks = rng.integers(0, 15, n)
        scores = rng.normal(size=n).round(1)
        prev = {int(c): " ".join(rng.choice(vocab, size=rng.integers(0, 4))) for c in cids}
        got = select_context_set(cids, chunks, scores, 6, previous_words=_words(prev))
        assert got.tolist() == _reference(cids, chunks, scores, 6, prev, 0.5), trial


def test_matches_the_slow_reference_across_blocks():
    """Hundreds of candidates: conflicts are computed a block at a time; the greedy result must not change."""
    rng = np.random.default_rng(2)
    vocab = [f"w{i}" for i in range(30)]
    for trial in range(4):
        n, size = 400, [5, 60, 150, 400][trial]
        cids = rng.permutation(5000)[:n]
        chunks = rng.integers(0, 150, n)
        scores = rng.normal(size=n).round(2)
        prev = {int(c): " ".join(rng.choice(vocab, size=rng.integers(0, 6))) for c in cids}
        got = select_context_set(cids, chunks, scores, size, previous_words=_words(prev), max_jaccard=0.4)
        chosen = _reference(cids, chunks, scores, size, prev, 0.4)
        assert got.tolist() == chosen, trial
        assert len(chosen) >= min(size, 20)  # the rules leave enough to test


def test_a_corpus_word_matrix_chooses_what_the_word_sets_choose():
    """``word_matrix`` (the sets of a whole corpus, built once) and ``previous_words`` pick the same
    contexts, across blocks, document starts (empty rows) included; a call with neither is refused."""
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(25)]
    texts = [" ".join(rng.choice(vocab, size=rng.integers(0, 7))) for _ in range(3000)]
    doc_start = np.repeat(np.arange(0, 3000, 30), 30)  # documents of 30 sentences
    prev = {c: texts[c - 1] if c > doc_start[c] else "" for c in range(3000)}
    matrix = previous_word_matrix(_words(prev), 3000)
    assert matrix.shape[0] == 3000 and matrix[30].nnz == 0 and matrix[31].nnz == len(word_set(texts[30]))
    for trial, size in enumerate([10, 100, 500]):
        cids = rng.permutation(3000)[:800]
        chunks = cids // 8
        scores = rng.normal(size=800).round(2)
        want = select_context_set(cids, chunks, scores, size, previous_words=_words(prev), max_jaccard=0.4)
        got = select_context_set(cids, chunks, scores, size, word_matrix=matrix, max_jaccard=0.4)
        assert got.tolist() == want.tolist() == _reference(cids, chunks, scores, size, prev, 0.4), trial
    with pytest.raises(TypeError, match="previous_words or word_matrix"):
        select_context_set(cids, chunks, scores, 5)
