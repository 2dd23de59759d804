from __future__ import annotations

import pysbd

from defsentflow.corpus import segment_document, segment_documents, split_paragraphs, split_sentences


def test_paragraphs_split_on_blank_lines_and_unwrap():
    text = "Title line\n\nFirst para\nwraps here.\n  \t\nSecond para.\r\n\r\nThird.\n\n\n"
    assert split_paragraphs(text) == ["Title line", "First para wraps here.", "Second para.", "Third."]


def test_sentences_match_pysbd():
    para = "Mr. Bennet was among the earliest. He had always intended to visit him, e.g. on Monday. Did he? Yes!"
    ref = [s.strip() for s in pysbd.Segmenter(language="en", clean=False).segment(para)]
    assert split_sentences(para) == ref
    assert split_sentences(para)[0].startswith("Mr. Bennet")  # an abbreviation is not a boundary


def test_pool_gives_the_same_result_in_order():
    texts = [f"Doc {i} starts here. It has two sentences.\n\nAnd a paragraph {i}." for i in range(240)]
    serial = [segment_document(t) for t in texts]
    assert segment_documents(texts, workers=2) == serial
    assert serial[7] == [["Doc 7 starts here.", "It has two sentences."], ["And a paragraph 7."]]
