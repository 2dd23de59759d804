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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.encoders.encoding import encode_texts
from defsentflow.encoders.loading import Autocast, LoadedEncoder, load_encoder, model_content_hash
from defsentflow.storage.atomic import atomic_dir
from defsentflow.training.config import ENTRY_ENCODINGS, EntryEncoding, validate_choice
from defsentflow.training.entry_shards import sum_entry_vectors
from defsentflow.training.targets import entry_targets

__all__ = ["ENTRY_SCHEMA", "EntryMatrix", "IcaTransform", "build_entry_embeddings", "entry_means", "ica_transform"]

ENTRY_SCHEMA = pa.schema([pa.field("row", pa.int64(), nullable=False), pa.field("entry", pa.string(), nullable=False)])

_POOLING = {"ac": "cls", "amp": "mean"}
ICA_SAMPLE_ABOVE = 200_000
ICA_SAMPLE = 100_000


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
    ica: IcaTransform | None = None

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or len(self.entries) != self.matrix.shape[0]:
            raise ValueError(f"{len(self.entries)} entries but a matrix of shape {self.matrix.shape}")

    @property
    def row_of(self) -> dict[str, int]:
        return {e: i for i, e in enumerate(self.entries)}

    def rows(self, entries: Sequence[str]) -> np.ndarray:
        """Row of each of ``entries`` (DefSent+ targets); a missing entry is an error naming it."""
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
            if self.ica is not None:
                self.ica.save(tmp)
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> EntryMatrix:
        p = Path(path)
        if not (p / "matrix.npy").is_file() or not (p / "entries.parquet").is_file():
            raise FileNotFoundError(f"{p}: not an entry matrix (needs matrix.npy and entries.parquet)")
        matrix = np.load(p / "matrix.npy")
        entries = pq.read_table(p / "entries.parquet").sort_by("row").column("entry").to_pylist()
        meta = json.loads((p / "meta.json").read_text()) if (p / "meta.json").is_file() else {}
        ica = IcaTransform.load(p) if (p / IcaTransform.FILE).is_file() else None
        return cls(entries=entries, matrix=matrix, meta=meta, ica=ica)


def entry_means(entries: Sequence[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Mean of ``vectors`` per entry, summed in float32; entries in order of first appearance."""
    vectors = np.asarray(vectors)
    return sum_entry_vectors(entries, np.arange(len(entries)), lambda rows: vectors[rows], vectors.shape[1])


@dataclass(frozen=True)
class IcaTransform:
    """A fitted FastICA map ``x -> scale * (x - mean) @ unmixing.T``, saved beside the matrix it made.

    Training fits it once on the entry matrix; evaluation and serving load it (:meth:`load`) and
    apply the same map to other entry vectors, so the evaluated space is the trained one (same
    component order and signs). Nothing refits it after training.
    """

    mean: np.ndarray        # [H]
    unmixing: np.ndarray    # [H, H] (FastICA.components_)
    scale: float = 100.0

    FILE = "ica.npz"

    @classmethod
    def fit(cls, matrix: np.ndarray, *, max_iter: int = 1000, random_state: int = 42,
            scale: float = 100.0, standardize: bool = True) -> IcaTransform:
        """FastICA (scikit-learn, unit-variance whitening, logcosh, ``n_components = dim``) on ``matrix``.

        Above ``ICA_SAMPLE_ABOVE`` (200,000) entries the map is fitted on a seeded sample of
        ``ICA_SAMPLE`` (100,000) rows and applied to all; the papers' dictionaries (WordNet, 127k
        entries, and smaller) are always fitted whole.

        ``standardize`` first scales every dimension to zero mean and unit variance (scikit-learn's
        ``StandardScaler``), as the DefSent+ reference code does; the scaling is folded into the
        saved map, so applying it needs nothing else.
        """
        from sklearn.decomposition import FastICA  # lazy: scikit-learn loads only where it is used
        from sklearn.preprocessing import StandardScaler  # lazy: scikit-learn loads only where it is used

        n = len(matrix)
        if n > ICA_SAMPLE_ABOVE:  # FastICA's cost and its float64 copy grow with N: fit on a seeded sample
            rows = np.sort(np.random.default_rng(random_state).choice(n, size=ICA_SAMPLE, replace=False))
            matrix = matrix[rows]
        matrix = np.asarray(matrix, dtype=np.float64)
        n, dim = matrix.shape
        if n < dim:
            raise ValueError(f"ICA needs at least as many entries as dimensions ({n} entries < {dim})")
        shift, spread = np.zeros(dim), np.ones(dim)
        if standardize:
            scaler = StandardScaler().fit(matrix)
            shift, spread = scaler.mean_, scaler.scale_
        ica = FastICA(n_components=dim, max_iter=max_iter, random_state=random_state, whiten="unit-variance",
                      fun="logcosh", tol=1e-4)
        ica.fit((matrix - shift) / spread)
        # scale * ((x - shift) / spread - m) @ W.T  ==  scale * (x - (shift + spread * m)) @ (W / spread).T
        unmixing = np.asarray(ica.components_, np.float64) / spread[None, :]
        mean = shift + spread * np.asarray(ica.mean_, dtype=np.float64)
        return cls(mean=mean, unmixing=unmixing, scale=float(scale))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The transformed rows of ``x`` (float64)."""
        return self.scale * ((np.asarray(x, dtype=np.float64) - self.mean) @ self.unmixing.T)

    def save(self, directory: str | os.PathLike) -> Path:
        path = Path(directory) / self.FILE
        with open(path, "wb") as fh:
            np.savez(fh, mean=self.mean, unmixing=self.unmixing, scale=np.float64(self.scale))
        return path

    @classmethod
    def load(cls, directory: str | os.PathLike) -> IcaTransform:
        """The transform saved in ``directory`` (an entry-matrix directory).

        Raises:
            FileNotFoundError: the directory keeps no ``ica.npz`` (its matrix was not ICA-transformed,
                or it was built before the ICA map was saved, commit f0d2839 of 2026-11-22: rebuild it).
        """
        path = Path(directory) / cls.FILE
        if not path.is_file():
            raise FileNotFoundError(f"{directory}: no saved ICA transform ({cls.FILE}); the entry matrix was "
                                    "built without ICA or before the ICA map was saved (commit f0d2839, 2026-11-22): rebuild it")
        with np.load(path) as z:
            return cls(mean=z["mean"], unmixing=z["unmixing"], scale=float(z["scale"]))


def ica_transform(matrix: np.ndarray, *, max_iter: int = 1000, random_state: int = 42, scale: float = 100.0) -> np.ndarray:
    """The entry matrix standardised, FastICA-transformed (scikit-learn, unit-variance whitening) and
    multiplied by ``scale``: :meth:`IcaTransform.fit` applied once.

    The result keeps the matrix's shape; it needs at least as many entries as dimensions. Use
    :meth:`IcaTransform.fit` to keep the fitted map.
    """
    ica = IcaTransform.fit(matrix, max_iter=max_iter, random_state=random_state, scale=scale)
    return ica(matrix).astype(np.float32)


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
        ica: apply :func:`ica_transform` (standardised FastICA, max_iter=1000, random_state=42, x100).
    """
    validate_choice("encoding", encoding, ENTRY_ENCODINGS)
    entries, definitions = list(entries), list(definitions)
    if len(entries) != len(definitions):
        raise ValueError(f"{len(entries)} entries but {len(definitions)} definitions")
    if not entries:
        raise ValueError("no (entry, definition) pairs")
    enc = encoder if isinstance(encoder, LoadedEncoder) else load_encoder(encoder, device=device)

    # each distinct definition is encoded once and summed from there: no [pairs, hidden] copy
    unique, inverse = np.unique(np.array(definitions, dtype=object), return_inverse=True)
    vectors = encode_texts(enc, unique.tolist(), pooling=_POOLING[encoding], batch_size=batch_size,
                           max_length=max_length, autocast=autocast, cache=cache, desc=f"entry embeddings ({encoding})")
    names, matrix = sum_entry_vectors(entries, inverse.reshape(-1), lambda rows: vectors[rows], vectors.shape[1])
    transform = None
    if ica:
        transform = IcaTransform.fit(matrix)
        matrix = transform(matrix).astype(np.float32)
    meta = {"encoding": encoding, "ica": ica, "model": enc.path, "model_hash": model_content_hash(enc.path),
            "max_length": max_length, "autocast": autocast, "n_pairs": len(entries), "n_entries": len(names)}
    return EntryMatrix(entries=names, matrix=matrix, meta=meta, ica=transform)
