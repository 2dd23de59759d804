"""Segmented documents -> the sentences and chunks tables."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from defsentflow.corpus.schemas import CHUNKS_SCHEMA, SENTENCES_SCHEMA

__all__ = ["window_sizes", "build_tables"]


def window_sizes(n: int, max_size: int) -> list[int]:
    """Split ``n`` consecutive sentences into the fewest windows of at most ``max_size``, balanced.

    Example:
        >>> window_sizes(10, 8)
        [5, 5]
    """
    if max_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {max_size}")
    k = -(-n // max_size)
    base, extra = divmod(n, k) if k else (0, 0)
    return [base + (i < extra) for i in range(k)]


def build_tables(doc_ids: Sequence[str], segmented: Sequence[list[list[str]]], chunk_sentences: int = 8) -> tuple[pa.Table, pa.Table]:
    """Number sentences and cut chunks.

    Args:
        doc_ids: one id per document.
        segmented: per document, its paragraphs as lists of sentences.
        chunk_sentences: the most sentences in one chunk; a chunk is one paragraph, or a balanced
            window of a longer paragraph, never crossing a paragraph or document boundary.

    Returns:
        ``(sentences, chunks)`` with :data:`SENTENCES_SCHEMA` and :data:`CHUNKS_SCHEMA`.
    """
    s_doc, s_para, s_idx, s_text = [], [], [], []
    c_doc, c_first, c_last, c_text = [], [], [], []
    sid = 0
    for doc_id, paras in zip(doc_ids, segmented, strict=True):
        pos = 0
        for p, sents in enumerate(paras):
            n = len(sents)
            s_doc.extend([doc_id] * n)
            s_para.extend([p] * n)
            s_idx.extend(range(pos, pos + n))
            s_text.extend(sents)
            start = 0
            for size in window_sizes(n, chunk_sentences):
                c_doc.append(doc_id)
                c_first.append(sid + start)
                c_last.append(sid + start + size - 1)
                c_text.append(" ".join(sents[start:start + size]))
                start += size
            pos += n
            sid += n
    sentences = pa.table(
        [np.arange(sid, dtype=np.int64), s_doc, np.asarray(s_para, np.int32), np.asarray(s_idx, np.int32), s_text],
        schema=SENTENCES_SCHEMA,
    )
    chunks = pa.table(
        [np.arange(len(c_doc), dtype=np.int64), c_doc, np.asarray(c_first, np.int64), np.asarray(c_last, np.int64), c_text],
        schema=CHUNKS_SCHEMA,
    )
    return sentences, chunks
