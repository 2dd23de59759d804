"""Corpora: documents -> paragraphs -> sentences -> chunks, stored as Parquet artifacts."""

from __future__ import annotations

from defsentflow.corpus.chunks import build_tables, window_sizes
from defsentflow.corpus.gutenberg import strip_gutenberg
from defsentflow.corpus.ingest import (
    CorpusConfig,
    IngestResult,
    corpus_key,
    ingest_corpus,
    load_chunks,
    load_sentences,
    resolve_corpus,
)
from defsentflow.corpus.readers import CorpusFormat, Document, QuarantineRecord, ReadResult, read_documents
from defsentflow.corpus.schemas import CHUNKS_SCHEMA, QUARANTINE_SCHEMA, SENTENCES_SCHEMA
from defsentflow.corpus.segment import segment_document, segment_documents, split_paragraphs, split_sentences

__all__ = [
    "CHUNKS_SCHEMA",
    "QUARANTINE_SCHEMA",
    "SENTENCES_SCHEMA",
    "CorpusConfig",
    "CorpusFormat",
    "Document",
    "IngestResult",
    "QuarantineRecord",
    "ReadResult",
    "build_tables",
    "corpus_key",
    "ingest_corpus",
    "load_chunks",
    "load_sentences",
    "read_documents",
    "resolve_corpus",
    "segment_document",
    "segment_documents",
    "split_paragraphs",
    "split_sentences",
    "strip_gutenberg",
    "window_sizes",
]
