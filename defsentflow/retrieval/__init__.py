"""Retrieval over corpus chunks: BM25 and TF-IDF as sparse matrices, dense via faiss.

Every index has ``build(texts)``, ``save(dir)``, ``load(dir)`` and
``search(queries, top_n) -> (ids int64 [Q, n], scores float32 [Q, n])``; ids index the chunks table.
"""

from __future__ import annotations

from defsentflow.retrieval.artifacts import INDEX_KINDS, IndexArtifact, IndexKind, build_index, load_index, open_index
from defsentflow.retrieval.bm25 import Bm25Config, Bm25Index
from defsentflow.retrieval.dense import DenseConfig, DenseIndex, Encoder
from defsentflow.retrieval.tfidf import TfidfConfig, TfidfIndex
from defsentflow.retrieval.tokenize import tokenize
from defsentflow.retrieval.topn import rank_order, top_n_rows

__all__ = [
    "INDEX_KINDS",
    "Bm25Config",
    "Bm25Index",
    "DenseConfig",
    "DenseIndex",
    "Encoder",
    "IndexArtifact",
    "IndexKind",
    "TfidfConfig",
    "TfidfIndex",
    "build_index",
    "load_index",
    "open_index",
    "rank_order",
    "tokenize",
    "top_n_rows",
]
