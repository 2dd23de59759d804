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


def _stock_spans(sentences: list[str], text: str) -> list[tuple[str, int, int]]:
    seg = pysbd.Segmenter(language="en", clean=False)
    seg.original_text = text
    return [(s.sent, s.start, s.end) for s in seg.sentences_with_char_spans(sentences)]


def test_sentence_spans_are_pysbds():
    from defsentflow.corpus.segment import _sentence_spans

    cases = [
        (["He came.", "He came.", "Then left."], "He came.  He came.\u00a0Then left.\t"),  # repeats, unicode space
        (["Gone.", "Here."], "Here. Here."),                                            # a sentence not found: dropped
        (["Here.", "Here.", "Here."], "Here. Here."),                                   # found once per place
        (["a", "a b"], "a b a b"),
        (["aa", "aa"], "aaa"),                                                          # matches never overlap
        (["", "x"], "x "),                                                              # an empty sentence
        (["end"], "the end"),
        ([], "text"),
    ]
    for sentences, text in cases:
        assert _sentence_spans(sentences, text) == _stock_spans(sentences, text), (sentences, text)


def test_the_segmenter_returns_what_stock_pysbd_returns():
    paras = ["Mr. Bennet was among the earliest.  He said \u201cno.\u201d Then he left... Or did he?",
             "1. First item. 2. Second item. a) one b) two", "U.S. officials met at 5 p.m. on Jan. 3. It rained.",
             "Same. Same. Same.", "No end punctuation here", "Spaces  between.   Many."]
    stock = pysbd.Segmenter(language="en", clean=False)
    from defsentflow.corpus.segment import _segmenter

    for para in paras:
        assert _segmenter().segment(para) == stock.segment(para), para
