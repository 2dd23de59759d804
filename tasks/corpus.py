"""Prefect tasks for corpora and retrieval indexes: thin calls into defsentflow.corpus / .retrieval.

Reuse is the library's: a corpus or an index whose content key is registered is found, not built again.
"""

from __future__ import annotations

from typing import Any

from defsentflow.corpus import ingest_corpus as ingest
from defsentflow.retrieval import build_index as build
from defsentflow.tasks.retries import IO_RETRIES
from defsentflow.tasks.step import step_task


def _ingest_corpus(paths: list[str], name: str, fmt: str = "auto", chunk_sentences: int = 8) -> dict[str, Any]:
    """Ingest a corpus (found by its content key when it exists)."""
    return ingest(paths, name, fmt=fmt, chunk_sentences=chunk_sentences).as_dict()


def _build_index(kind: str, corpus_key: str) -> dict[str, Any]:
    """Build (or find) a sparse retrieval index over a corpus artifact's chunks."""
    art = build(kind, corpus_key)
    return {"key": art.key, "kind": art.kind, "corpus_key": art.corpus_key, "path": str(art.path), "documents": art.documents}


ingest_corpus = step_task(_ingest_corpus, "ingest-corpus", retries=IO_RETRIES)
build_index = step_task(_build_index, "build-index", retries=IO_RETRIES)
