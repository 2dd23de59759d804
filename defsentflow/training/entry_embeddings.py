"""DefSent+ entry embeddings: one vector per dictionary entry, whatever its tokenisation.

``entry(e)`` is the mean over ``e``'s definitions of ``pooling(encoder([CLS] definition [SEP]))``,
with CLS pooling (AC, "average CLS") or mean pooling (AMP, "average mean pooling"). Definitions
go through the shared encoding engine once each (de-duplicated, length-sorted, padded per batch),
then the per-entry means are a scatter-add; the research code instead ran one forward pass per
entry with its definitions padded to the entry's longest, which is many times slower.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.encoders.encoding import encode_texts
from defsentflow.encoders.loading import Autocast, LoadedEncoder, load_encoder, model_content_hash
from defsentflow.storage.atomic import atomic_dir
from defsentflow.training.config import ENTRY_ENCODINGS, EntryEncoding, validate_choice

__all__ = ["ENTRY_SCHEMA", "EntryMatrix", "build_entry_embeddings", "entry_means", "ica_transform"]

ENTRY_SCHEMA = pa.schema([pa.field("row", pa.int64(), nullable=False), pa.field("entry", pa.string(), nullable=False)])

_POOLING = {"ac": "cls", "amp": "mean"}


@dataclass
class EntryMatrix:
    """Entries and their vectors: row ``i`` of ``matrix`` (float32) belongs to ``entries[i]``.

    Example:
        >>> em = build_entry_embeddings("minilm", ["dog", "dog", "cat"], ["a pet", "a hound", "a feline"])
        >>> em.matrix.shape, em.rows(["cat"])
        ((2, 384), array([1]))
    """

    entries: list[str]
    matrix: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or len(self.entries) != self.matrix.shape[0]:
            raise ValueError(f"{len(self.entries)} entries but a matrix of shape {self.matrix.shape}")

    @property
    def row_of(self) -> dict[str, int]:
        return {e: i for i, e in enumerate(self.entries)}

    def rows(self, entries: Sequence[str]) -> np.ndarray:
        """Row of each of ``entries`` (DefSent+ targets); a missing entry is an error naming it."""
        from defsentflow.training.targets import entry_targets

        return entry_targets(self.row_of, entries)

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``matrix.npy``, ``entries.parquet`` and ``meta.json`` into directory ``path``, atomically."""
        with atomic_dir(path) as tmp:
            with open(tmp / "matrix.npy", "wb") as fh:
                np.save(fh, np.ascontiguousarray(self.matrix, dtype=np.float32))
            table = pa.table({"row": np.arange(len(self.entries), dtype=np.int64), "entry": self.entries},
                             schema=ENTRY_SCHEMA)
            pq.write_table(table, tmp / "entries.parquet", compression="zstd")
            (tmp / "meta.json").write_text(json.dumps(self.meta, indent=2, sort_keys=True, default=str))
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "EntryMatrix":
        p = Path(path)
        if not (p / "matrix.npy").is_file() or not (p / "entries.parquet").is_file():
            raise FileNotFoundError(f"{p}: not an entry matrix (needs matrix.npy and entries.parquet)")
        matrix = np.load(p / "matrix.npy")
        entries = pq.read_table(p / "entries.parquet").sort_by("row").column("entry").to_pylist()
        meta = json.loads((p / "meta.json").read_text()) if (p / "meta.json").is_file() else {}
        return cls(entries=entries, matrix=matrix, meta=meta)


def entry_means(entries: Sequence[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Mean of ``vectors`` per entry; entries in order of first appearance."""
    codes: dict[str, int] = {}
    inverse = np.fromiter((codes.setdefault(e, len(codes)) for e in entries), dtype=np.int64, count=len(entries))
    order = np.argsort(inverse, kind="stable")
    counts = np.bincount(inverse, minlength=len(codes)).astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(counts[:-1])]).astype(np.int64)
    sums = np.add.reduceat(np.asarray(vectors, dtype=np.float64)[order], starts, axis=0)
    return list(codes), (sums / counts[:, None]).astype(np.float32)


def ica_transform(matrix: np.ndarray, *, max_iter: int = 1000, random_state: int = 42, scale: float = 100.0) -> np.ndarray:
    """FastICA (scikit-learn, unit-variance whitening) of the entry matrix, times ``scale``.

    The result keeps the matrix's shape; it needs at least as many entries as dimensions.
    """
    from sklearn.decomposition import FastICA

    matrix = np.asarray(matrix, dtype=np.float32)
    n, dim = matrix.shape
    if n < dim:
        raise ValueError(f"ICA needs at least as many entries as dimensions ({n} entries < {dim})")
    ica = FastICA(n_components=dim, max_iter=max_iter, random_state=random_state, whiten="unit-variance")
    return (ica.fit_transform(matrix.astype(np.float64)) * scale).astype(np.float32)


def build_entry_embeddings(encoder: LoadedEncoder | str | os.PathLike, entries: Sequence[str],
                           definitions: Sequence[str], encoding: EntryEncoding = "amp", *, batch_size: int = 128,
                           max_length: int = 64, autocast: Autocast = "none", cache: bool | str | os.PathLike = False,
                           ica: bool = False, device: str = "auto") -> EntryMatrix:
    """Build the DefSent+ entry matrix from (entry, definition) pairs.

    Args:
        encoder: a loaded encoder, a model directory or a bundled alias.
        entries: the entry of each pair (an entry appears once per definition).
        definitions: the definition of each pair.
        encoding: ``ac`` (average CLS) or ``amp`` (average mean pooling).
        cache: the embedding cache of :func:`~defsentflow.encoders.encode_texts`.
        ica: apply :func:`ica_transform` (FastICA, max_iter=1000, random_state=42, x100).
    """
    validate_choice("encoding", encoding, ENTRY_ENCODINGS)
    entries, definitions = list(entries), list(definitions)
    if len(entries) != len(definitions):
        raise ValueError(f"{len(entries)} entries but {len(definitions)} definitions")
    if not entries:
        raise ValueError("no (entry, definition) pairs")
    enc = encoder if isinstance(encoder, LoadedEncoder) else load_encoder(encoder, device=device)
    vectors = encode_texts(enc, definitions, pooling=_POOLING[encoding], batch_size=batch_size,
                           max_length=max_length, autocast=autocast, cache=cache, desc=f"entry embeddings ({encoding})")
    names, matrix = entry_means(entries, vectors)
    if ica:
        matrix = ica_transform(matrix)
    meta = {"encoding": encoding, "ica": ica, "model": enc.path, "model_hash": model_content_hash(enc.path),
            "max_length": max_length, "autocast": autocast, "n_pairs": len(entries), "n_entries": len(names)}
    return EntryMatrix(entries=names, matrix=matrix, meta=meta)
