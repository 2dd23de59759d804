"""Dense retrieval with faiss over embeddings from an encoder passed in by the caller."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from defsentflow.progress import progress
from defsentflow.retrieval.sparse import read_meta, write_meta

__all__ = ["DenseConfig", "DenseIndex", "Encoder"]

Encoder = Callable[[list[str]], np.ndarray]
"""texts -> ``float32 [len(texts), dim]`` embeddings."""


@dataclass(frozen=True)
class DenseConfig:
    normalize: bool = True  # inner product of unit vectors = cosine similarity
    batch_size: int = 256


class DenseIndex:
    """Exact inner-product search (``faiss.IndexFlatIP``) over encoded texts.

    Example:
        >>> encode = lambda texts: np.array([[len(t), 1.0] for t in texts], np.float32)
        >>> index = DenseIndex(encode).build(["a", "bbb", "cc"])
        >>> index.search(["dddd"], top_n=1)[0].shape
        (1, 1)
    """

    kind = "dense"

    def __init__(self, encoder: Encoder | None = None, config: DenseConfig | None = None):
        self.encoder = encoder
        self.config = config or DenseConfig()
        self.index = None

    def __len__(self) -> int:
        return 0 if self.index is None else self.index.ntotal

    def _encode(self, texts: Sequence[str], desc: str) -> np.ndarray:
        if self.encoder is None:
            raise RuntimeError("DenseIndex needs an encoder (texts -> float32 array) to build or search")
        bs = self.config.batch_size
        parts = []
        for start in progress(range(0, len(texts), bs), total=-(-len(texts) // bs), desc=desc, unit="batch"):
            batch = list(texts[start:start + bs])
            emb = np.ascontiguousarray(np.asarray(self.encoder(batch), dtype=np.float32))
            if emb.ndim != 2 or emb.shape[0] != len(batch):
                raise ValueError(f"encoder returned shape {emb.shape} for {len(batch)} texts; expected (n, dim)")
            parts.append(emb)
        emb = np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)
        if self.config.normalize:
            import faiss  # lazy: faiss loads only when a dense index is built or searched

            faiss.normalize_L2(emb)
        return emb

    def build(self, texts: Sequence[str]) -> DenseIndex:
        import faiss  # lazy: faiss loads only when a dense index is built or searched

        if not len(texts):
            raise ValueError("cannot build a dense index over no documents")
        emb = self._encode(texts, "encoding documents")
        self.index = faiss.IndexFlatIP(emb.shape[1])
        self.index.add(emb)
        return self

    def search(self, queries: Sequence[str], top_n: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Best ``top_n`` documents per query: ``(ids int64 [Q, n], scores float32 [Q, n])``, best first."""
        if self.index is None:
            raise RuntimeError("the index is empty: call build(texts) or load(directory) first")
        n = min(top_n, self.index.ntotal)
        scores, ids = self.index.search(self._encode(queries, "encoding queries"), n)
        return ids.astype(np.int64, copy=False), scores.astype(np.float32, copy=False)

    def save(self, directory: str | Path) -> Path:
        import faiss  # lazy: faiss loads only when a dense index is built or searched

        if self.index is None:
            raise RuntimeError("the index is empty: call build(texts) first")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self.index, str(directory / "dense.faiss"))
        write_meta({"kind": self.kind, **asdict(self.config), "documents": len(self), "dim": self.index.d}, directory)
        return directory

    @classmethod
    def load(cls, directory: str | Path, encoder: Encoder | None = None) -> DenseIndex:
        import faiss  # lazy: faiss loads only when a dense index is built or searched

        directory = Path(directory)
        meta = read_meta(directory, cls.kind)
        index = cls(encoder, DenseConfig(**{k: meta[k] for k in DenseConfig.__dataclass_fields__}))
        index.index = faiss.read_index(str(directory / "dense.faiss"))
        return index
