"""Documents -> paragraphs (blank-line separated) -> sentences (pysbd).

pysbd is accurate but slow (about 5 ms per paragraph), so large corpora are split in a small
process pool; each worker builds its segmenter once. Its last pass, which finds each sentence back
in the original text, compiles one regular expression per sentence and scans the text from its start
for each: here the same search is made with ``str.find`` (:func:`_sentence_spans`; the same sentences,
whitespace and drops), which also keeps pysbd's own rule patterns in ``re``'s cache.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Sequence
from functools import lru_cache

from defsentflow.progress import progress
from defsentflow.workers import die_with_parent, owner_initargs

__all__ = ["split_paragraphs", "split_sentences", "segment_document", "segment_documents"]

_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")
# Below this many documents a process pool costs more to start than it saves.
_POOL_MIN_DOCS = 200


def split_paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, each with its whitespace (hard line wraps) collapsed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paras = (" ".join(p.split()) for p in _BLANK_LINE.split(text))
    return [p for p in paras if p]


def _sentence_spans(sentences: Sequence[str], text: str) -> list[tuple[str, int, int]]:
    """pysbd's ``Segmenter.sentences_with_char_spans`` without a regular expression per sentence.

    pysbd takes, for each sentence in turn, the first non-overlapping match of ``re.escape(sent) +
    r"\\s*"`` in ``text`` that ends after the previous sentence's span, and drops a sentence with none.
    A match starts where ``sent`` occurs and runs over the whitespace after it (``\\s`` is
    ``str.isspace`` for text); the next match is searched from its end (one further after an empty one).
    """
    spans, prior, n = [], 0, len(text)
    for sent in sentences:
        pos = 0
        while (start := text.find(sent, pos)) >= 0:
            end = start + len(sent)
            while end < n and text[end].isspace():
                end += 1
            if end > prior:
                spans.append((text[start:end], start, end))
                prior = end
                break
            pos = end if end > start else start + 1
    return spans


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd  # lazy: the sentence splitter loads only when a corpus is ingested
    from pysbd.utils import TextSpan  # lazy: as pysbd above

    class Segmenter(pysbd.Segmenter):
        def sentences_with_char_spans(self, sentences):
            return [TextSpan(*span) for span in _sentence_spans(sentences, self.original_text)]

    return Segmenter(language="en", clean=False)


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph, by pysbd (English rules, text not altered)."""
    return [s for s in (s.strip() for s in _segmenter().segment(paragraph)) if s]


def segment_document(text: str) -> list[list[str]]:
    """A document as paragraphs of sentences; paragraphs without a sentence are dropped."""
    out = []
    for para in split_paragraphs(text):
        sents = split_sentences(para)
        if sents:
            out.append(sents)
    return out


def segment_documents(texts: Sequence[str], *, workers: int | None = None, desc: str = "segmenting") -> list[list[list[str]]]:
    """:func:`segment_document` over many texts, in document order.

    Args:
        texts: document texts.
        workers: processes to use; default ``min(2, cpu count)``. 1 runs in this process.
        desc: progress bar label.
    """
    workers = workers or min(2, os.cpu_count() or 1)
    bar = progress(total=len(texts), desc=desc, unit="doc")
    try:
        if workers <= 1 or len(texts) < _POOL_MIN_DOCS:
            out = []
            for t in texts:
                out.append(segment_document(t))
                bar.update()
            return out
        # forkserver, not fork: the caller may run threads (Prefect, DuckDB) that fork would copy mid-lock.
        ctx = multiprocessing.get_context("forkserver")
        chunksize = max(1, min(64, len(texts) // (workers * 8)))
        # Workers die with this process, even on kill -9 (defsentflow/workers.py).
        with ctx.Pool(workers, initializer=die_with_parent, initargs=owner_initargs()) as pool:
            out = []
            for doc in pool.imap(segment_document, texts, chunksize=chunksize):
                out.append(doc)
                bar.update()
            return out
    finally:
        bar.close()
