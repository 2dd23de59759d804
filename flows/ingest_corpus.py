"""The ``ingest-corpus`` flow: raw text -> sentences and chunks (-> optional retrieval indexes)."""

from __future__ import annotations

from typing import Any, Literal

from prefect import flow

from defsentflow.tasks.corpus import build_index, ingest_corpus


@flow(name="ingest-corpus", log_prints=True)
def ingest_corpus_flow(paths: list[str], name: str, fmt: Literal["auto", "text", "jsonl", "parquet"] = "auto",
                       chunk_sentences: int = 8, indexes: list[Literal["bm25", "tfidf"]] | None = None) -> dict[str, Any]:
    """Ingest ``paths`` as corpus ``name``; found by the input files' content key when it exists.

    Returns the corpus reference, with ``indexes`` (kind -> index reference) when asked for.
    """
    corpus = ingest_corpus([str(p) for p in paths], name, fmt, chunk_sentences)
    refs = {kind: build_index(kind, corpus["key"]) for kind in dict.fromkeys(indexes or [])}
    return {**corpus, "indexes": refs}
