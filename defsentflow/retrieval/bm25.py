"""Okapi BM25 as one sparse matrix, scoring exactly like ``rank_bm25.BM25Okapi``.

``rank_bm25`` loops over documents in Python for every query term. Here the per-(term, document)
weight ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` is computed once, stored as a
term-by-document CSR matrix, and a batch of queries (term counts) is scored with one sparse product.
The idf, its floor for terms in more than half of the documents (``epsilon * average idf``) and
the order of floating-point operations follow rank-bm25, so scores agree to rounding and the
rankings agree.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from defsentflow.retrieval.sparse import (
    batched_top_n,
    load_csr,
    load_terms,
    read_meta,
    save_csr,
    save_terms,
    write_meta,
)
from defsentflow.retrieval.tokenize import tokenize as default_tokenize

__all__ = ["Bm25Config", "Bm25Index"]


@dataclass(frozen=True)
class Bm25Config:
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25


class Bm25Index:
    """BM25 over a list of texts (the corpus chunks).

    Example:
        >>> index = Bm25Index().build(["the cat sat", "a dog barked", "the cat and the dog"])
        >>> ids, scores = index.search(["cat"], top_n=2)
        >>> ids.tolist()
        [[0, 2]]
    """

    kind = "bm25"

    def __init__(self, config: Bm25Config | None = None, *, tokenizer: Callable[[str], list[str]] = default_tokenize):
        self.config = config or Bm25Config()
        self.tokenizer = tokenizer
        self.vocab: dict[str, int] = {}
        self.idf = np.zeros(0)
        self.doc_len = np.zeros(0, np.int64)
        self.avgdl = 0.0
        self.average_idf = 0.0
        self.weights_t: sp.csr_matrix | None = None  # [terms, documents]

    def __len__(self) -> int:
        return len(self.doc_len)

    def build(self, texts: Sequence[str]) -> Bm25Index:
        """Index ``texts``; document ``i`` is ``texts[i]``."""
        if not len(texts):
            raise ValueError("cannot build a BM25 index over no documents")
        vocab: dict[str, int] = {}  # first-appearance order, like rank-bm25's document-frequency dict
        indptr, indices, counts, doc_len = [0], [], [], []
        for text in texts:
            tokens = self.tokenizer(text)
            doc_len.append(len(tokens))
            for word, c in Counter(tokens).items():
                indices.append(vocab.setdefault(word, len(vocab)))
                counts.append(c)
            indptr.append(len(indices))
        n_docs = len(doc_len)
        total = sum(doc_len)
        if total == 0:
            raise ValueError("cannot build a BM25 index: the documents have no tokens")
        indices_a = np.asarray(indices, np.int64)
        tf = np.asarray(counts, np.int64)
        dl = np.asarray(doc_len, np.int64)
        df = np.bincount(indices_a, minlength=len(vocab))

        # idf exactly as rank-bm25: math.log per term, a sequential sum for the average, then the floor.
        idf = np.array([math.log(n_docs - f + 0.5) - math.log(f + 0.5) for f in df.tolist()], np.float64)
        idf_sum = 0.0
        for v in idf.tolist():
            idf_sum += v
        average_idf = idf_sum / len(idf)
        idf[idf < 0] = self.config.epsilon * average_idf

        k1, b = self.config.k1, self.config.b
        avgdl = total / n_docs
        rows = np.repeat(np.arange(n_docs), np.diff(np.asarray(indptr)))
        doc_len_f = dl[rows]
        weight = idf[indices_a] * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len_f / avgdl)))
        matrix = sp.csr_matrix((weight, indices_a, np.asarray(indptr, np.int64)), shape=(n_docs, len(vocab)))

        self.vocab, self.idf, self.doc_len, self.avgdl, self.average_idf = vocab, idf, dl, avgdl, average_idf
        self.weights_t = matrix.T.tocsr()
        return self

    def query_matrix(self, queries: Sequence[str]) -> sp.csr_matrix:
        """Term counts of each query over the index vocabulary (unknown terms dropped)."""
        indptr, indices, data = [0], [], []
        vocab = self.vocab
        for q in queries:
            counts = Counter(t for t in self.tokenizer(q) if t in vocab)
            indices.extend(vocab[t] for t in counts)
            data.extend(counts.values())
            indptr.append(len(indices))
        return sp.csr_matrix((np.asarray(data, np.float64), np.asarray(indices, np.int64), np.asarray(indptr, np.int64)),
                             shape=(len(queries), len(vocab)))

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """Dense ``float64 [Q, M]`` scores; row ``i`` equals ``BM25Okapi.get_scores(tokenize(queries[i]))``."""
        self._check_built()
        return (self.query_matrix(queries) @ self.weights_t).toarray()

    def search(self, queries: Sequence[str], top_n: int = 10, *, batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Best ``top_n`` documents per query: ``(ids int64 [Q, n], scores float32 [Q, n])``, best first."""
        self._check_built()
        return batched_top_n(self.query_matrix(queries), self.weights_t, top_n, batch_size=batch_size, desc="bm25")

    def _check_built(self) -> None:
        if self.weights_t is None:
            raise RuntimeError("the index is empty: call build(texts) or load(directory) first")

    def save(self, directory: str | Path) -> Path:
        """Write the index into ``directory`` (created if missing) as ``.npy`` arrays and Parquet."""
        self._check_built()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        save_csr(self.weights_t, directory, "weights_t")
        np.save(directory / "idf.npy", self.idf)
        np.save(directory / "doc_len.npy", self.doc_len)
        save_terms(list(self.vocab), directory)
        write_meta({"kind": self.kind, **asdict(self.config), "avgdl": self.avgdl, "average_idf": self.average_idf,
                    "documents": len(self), "terms": len(self.vocab), "tokenizer": "defsentflow.retrieval.tokenize"}, directory)
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Bm25Index:
        directory = Path(directory)
        meta = read_meta(directory, cls.kind)
        index = cls(Bm25Config(k1=meta["k1"], b=meta["b"], epsilon=meta["epsilon"]))
        index.weights_t = load_csr(directory, "weights_t")
        index.idf = np.load(directory / "idf.npy")
        index.doc_len = np.load(directory / "doc_len.npy")
        index.vocab = {t: i for i, t in enumerate(load_terms(directory))}
        index.avgdl, index.average_idf = meta["avgdl"], meta["average_idf"]
        return index
