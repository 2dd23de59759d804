"""Prefect tasks for corpora and retrieval indexes: thin calls into defsentflow.corpus / .retrieval."""

from __future__ import annotations

from typing import Any

from defsentflow.corpus import ingest_corpus as ingest
from defsentflow.retrieval import build_index as build
from defsentflow.tasks.caching import stage_task
from defsentflow.tasks.retries import IO_RETRIES


@stage_task(name="ingest-corpus", **IO_RETRIES)
def ingest_corpus(sources: list[dict[str, str]], name: str, fmt: str = "auto", chunk_sentences: int = 8) -> dict[str, Any]:
    """Ingest a corpus. ``sources`` are :func:`tasks.caching.file_ref` dicts, so the Prefect cache key
    changes with the files' contents; the library's own content key skips the work on a hit as well."""
    res = ingest([s["path"] for s in sources], name, fmt=fmt, chunk_sentences=chunk_sentences)
    return res.as_dict()


@stage_task(name="build-index", **IO_RETRIES)
def build_index(kind: str, corpus_key: str) -> dict[str, Any]:
    """Build (or find) a sparse retrieval index over a corpus artifact's chunks."""
    art = build(kind, corpus_key)
    return {"key": art.key, "kind": art.kind, "corpus_key": art.corpus_key, "path": str(art.path), "documents": art.documents}
