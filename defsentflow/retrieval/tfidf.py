"""TF-IDF over word uni- and bi-grams (scikit-learn), cosine similarity by one sparse product."""

from __future__ import annotations

from collections.abc import Sequence
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

__all__ = ["TfidfConfig", "TfidfIndex"]


@dataclass(frozen=True)
class TfidfConfig:
    """Settings passed to ``TfidfVectorizer`` (its defaults otherwise: lower-casing, l2 norm, smooth idf)."""

    ngram_min: int = 1
    ngram_max: int = 2
    min_df: int = 1
    sublinear_tf: bool = False


class TfidfIndex:
    """Cosine similarity of L2-normalised TF-IDF vectors.

    Example:
        >>> index = TfidfIndex().build(["the cat sat", "a dog barked", "the cat and the dog"])
        >>> index.search(["cat sat"], top_n=1)[0].tolist()
        [[0]]
    """

    kind = "tfidf"

    def __init__(self, config: TfidfConfig | None = None):
        self.config = config or TfidfConfig()
        self.vectorizer = None
        self.matrix_t: sp.csr_matrix | None = None  # [terms, documents]

    def __len__(self) -> int:
        return 0 if self.matrix_t is None else self.matrix_t.shape[1]

    def _vectorizer(self, vocabulary: dict[str, int] | None = None):
        from sklearn.feature_extraction.text import TfidfVectorizer  # lazy: scikit-learn loads only where it is used

        c = self.config
        return TfidfVectorizer(ngram_range=(c.ngram_min, c.ngram_max), min_df=c.min_df, sublinear_tf=c.sublinear_tf,
                               vocabulary=vocabulary, dtype=np.float64)

    def build(self, texts: Sequence[str]) -> TfidfIndex:
        """Fit the vectoriser on ``texts`` and index them; document ``i`` is ``texts[i]``."""
        if not len(texts):
            raise ValueError("cannot build a TF-IDF index over no documents")
        self.vectorizer = self._vectorizer()
        self.matrix_t = self.vectorizer.fit_transform(list(texts)).T.tocsr()
        return self

    def query_matrix(self, queries: Sequence[str]) -> sp.csr_matrix:
        self._check_built()
        return self.vectorizer.transform(list(queries))

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """Dense ``float64 [Q, M]`` cosine similarities."""
        return (self.query_matrix(queries) @ self.matrix_t).toarray()

    def search(self, queries: Sequence[str], top_n: int = 10, *, batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Best ``top_n`` documents per query: ``(ids int64 [Q, n], scores float32 [Q, n])``, best first."""
        return batched_top_n(self.query_matrix(queries), self.matrix_t, top_n, batch_size=batch_size, desc="tfidf")

    def _check_built(self) -> None:
        if self.matrix_t is None:
            raise RuntimeError("the index is empty: call build(texts) or load(directory) first")

    def save(self, directory: str | Path) -> Path:
        """Write the matrix, the vocabulary (in column order) and the idf weights into ``directory``."""
        self._check_built()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        save_csr(self.matrix_t, directory, "matrix_t")
        terms = [""] * len(self.vectorizer.vocabulary_)
        for term, i in self.vectorizer.vocabulary_.items():
            terms[i] = term
        save_terms(terms, directory)
        np.save(directory / "idf.npy", self.vectorizer.idf_)
        write_meta({"kind": self.kind, **asdict(self.config), "documents": len(self), "terms": len(terms)}, directory)
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> TfidfIndex:
        directory = Path(directory)
        meta = read_meta(directory, cls.kind)
        index = cls(TfidfConfig(**{k: meta[k] for k in TfidfConfig.__dataclass_fields__}))
        index.vectorizer = index._vectorizer({t: i for i, t in enumerate(load_terms(directory))})
        index.vectorizer.idf_ = np.load(directory / "idf.npy")
        index.matrix_t = load_csr(directory, "matrix_t")
        return index
