"""Documents -> paragraphs (blank-line separated) -> sentences (pysbd).

pysbd is accurate but slow (about 5 ms per paragraph), so large corpora are split in a small
process pool; each worker builds its segmenter once.
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


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd  # lazy: the sentence splitter loads only when a corpus is ingested

    return pysbd.Segmenter(language="en", clean=False)


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
