"""Reverse-dictionary serving: a faiss inner-product index over entry embeddings.

The index is built once per (model, entry encoder, dictionary content, mode, settings) and kept as
a catalog artifact (``<data root>/revdict/<key>/``: ``index.faiss``, ``entries.parquet``,
``meta.json``). Any dictionary dataset can be indexed, so entries added later (a new dataset,
or a re-ingested one) are served without retraining: only the index is rebuilt.

Modes (see :mod:`defsentflow.evaluation.revdict`): ``cosine`` indexes L2-normalised entry means
built by the model itself and normalises the query; ``head`` indexes the entry means built by
the model's entry encoder (the frozen DefSent+ head space) and queries with the training-time
output (pooled, then the pooler).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["RevdictIndex", "IndexMode", "build_revdict_index", "index_key", "resolve_mode"]

IndexMode = Literal["auto", "head", "cosine"]

_ENTRIES_SCHEMA = pa.schema([pa.field("entry", pa.string(), nullable=False),
                             pa.field("n_definitions", pa.int32(), nullable=False)])


def resolve_mode(mode: str, meta: dict[str, Any]) -> str:
    """``auto``: ``head`` for models trained against an entry head (their meta names the entry
    encoder), else ``cosine``."""
    if mode not in ("auto", "head", "cosine"):
        raise ValueError(f"mode must be one of ('auto', 'head', 'cosine'), got {mode!r}")
    if mode == "auto":
        return "head" if meta.get("entry_encoder") else "cosine"
    return mode


@dataclass(frozen=True)
class _Spec:
    model: str
    mode: str
    pooling: str
    use_pooler: bool
    entry_encoder: str
    entry_encoding: str
    ica: bool
    normalize: bool
    max_length: int


def _spec(model: str | os.PathLike, mode: str, pooling: str | None, max_length: int) -> _Spec:
    from defsentflow.encoders import resolve_model_path, validate_pooling
    from defsentflow.evaluation.revdict import model_meta

    meta = model_meta(model)
    mode = resolve_mode(mode, meta)
    pooling = validate_pooling(pooling or meta.get("pooling") or "mean")
    model_path = resolve_model_path(model)
    if mode == "cosine":
        return _Spec(str(model_path), mode, pooling, False, str(model_path), "same", False, True, max_length)
    encoding = meta.get("entry_encoding") or ("ac" if pooling == "cls" else "amp")
    return _Spec(str(model_path), mode, pooling, bool(meta.get("use_pooler", True)),
                 str(resolve_model_path(meta.get("entry_encoder") or model)), encoding,
                 bool(meta.get("ica", False)), bool(meta.get("normalize_logits", False)), max_length)


def index_key(spec: _Spec, dictionary_hash: str) -> str:
    from dataclasses import asdict

    from defsentflow.encoders import model_content_hash
    from defsentflow.storage import code_version, combine_hashes, hash_config

    fields = asdict(spec)
    fields.pop("model"), fields.pop("entry_encoder")
    return combine_hashes(["revdict_index", model_content_hash(spec.model), model_content_hash(spec.entry_encoder),
                           dictionary_hash, hash_config(fields), code_version()])


class RevdictIndex:
    """A loaded reverse-dictionary index.

    Example:
        >>> idx = build_revdict_index("storage/models/pst/abc", "sample")
        >>> idx.search(["a domesticated carnivorous mammal"], k=10)[0][:3]
        [('dog', 0.61), ('cat', 0.58), ...]
    """

    def __init__(self, path: str | os.PathLike):
        import faiss

        self.path = Path(path)
        self.meta: dict[str, Any] = json.loads((self.path / "meta.json").read_text())
        self.index = faiss.read_index(str(self.path / "index.faiss"))
        self.entries: list[str] = pq.read_table(self.path / "entries.parquet").column("entry").to_pylist()
        self._encoder = None

    def query_vectors(self, texts: Sequence[str], *, device: str = "auto") -> np.ndarray:
        """The query side: the pooled (cosine) or head (pooler) vectors of ``texts``."""
        m = self.meta
        if m["mode"] == "head":
            from defsentflow.training.heads import sentence_head_vectors

            vecs = np.asarray(sentence_head_vectors(m["model"], list(texts), m["pooling"], m["use_pooler"],
                                                    max_length=m["max_length"], device=device), dtype=np.float32)
        else:
            from defsentflow.encoders import encode_texts, load_encoder

            if self._encoder is None:
                self._encoder = load_encoder(m["model"], device=device)
            vecs = encode_texts(self._encoder, list(texts), pooling=m["pooling"], max_length=m["max_length"])
        if m["normalize"]:
            vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True).clip(min=1e-12)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def search_vectors(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """faiss top-``k``: (scores ``[Q, k]``, entry indices ``[Q, k]``)."""
        k = min(k, self.index.ntotal)
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def search(self, texts: Sequence[str], k: int = 10, *, device: str = "auto") -> list[list[tuple[str, float]]]:
        """Top-``k`` (entry, score) for each definition in ``texts``."""
        scores, idx = self.search_vectors(self.query_vectors(texts, device=device), k)
        return [[(self.entries[j], float(s)) for s, j in zip(srow, irow) if j >= 0] for srow, irow in zip(scores, idx)]


def _entry_matrix(spec: _Spec, table: pa.Table, *, batch_size: int,
                  device: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    from defsentflow.encoders import encode_texts, load_encoder
    from defsentflow.evaluation.revdict import entry_sums, fit_ica, prepare_queries

    data = prepare_queries(table, split="test", candidates="all", max_queries=0)
    pool = spec.pooling if spec.mode == "cosine" else ("cls" if spec.entry_encoding == "ac" else "mean")
    enc = load_encoder(spec.entry_encoder, device=device)
    vecs = encode_texts(enc, data.definitions, pooling=pool, batch_size=batch_size, max_length=spec.max_length,
                        cache=True, desc="indexing entries")
    sums, counts = entry_sums(vecs, data.def_entry, len(data.entries))
    means = sums / counts[:, None]
    if spec.ica:
        means = fit_ica(means)(means)
    if spec.normalize:
        means = means / np.linalg.norm(means, axis=1, keepdims=True).clip(min=1e-12)
    return data.entries, means.astype(np.float32), counts


def build_revdict_index(model: str | os.PathLike, dictionary: str | pa.Table, *, mode: IndexMode = "auto",
                        pooling: str | None = None, max_length: int = 64, batch_size: int = 128,
                        device: str = "auto", root: str | os.PathLike | None = None,
                        rebuild: bool = False) -> RevdictIndex:
    """Build (or reuse) the faiss index of ``dictionary``'s entries for ``model``.

    Args:
        model: model directory, Hugging Face id or ``minilm``.
        dictionary: dataset name/key, or a table with entry and definition (and split) columns.
        mode: ``head``, ``cosine`` or ``auto`` (head when the model has an entry head).
        root: data root (default ``$DEFSENTFLOW_HOME`` or ``./storage``).
        rebuild: ignore a cached index.
    """
    import faiss

    from defsentflow.evaluation.revdict import dictionary_content_hash, load_dictionary_table
    from defsentflow.storage import Catalog, atomic_dir, data_root, hash_path, write_parquet

    table = load_dictionary_table(dictionary, root=root)
    if "split" not in table.column_names:
        table = table.append_column("split", pa.array(["test"] * table.num_rows, pa.string()))
    spec = _spec(model, mode, pooling, max_length)
    dict_hash = dictionary_content_hash(table)
    key = index_key(spec, dict_hash)
    cat = Catalog(root)
    found = None if rebuild else cat.artifact(key)
    if found is not None:
        return RevdictIndex(found["path"])
    entries, matrix, counts = _entry_matrix(spec, table, batch_size=batch_size, device=device)
    final = data_root(root) / "revdict" / key
    with atomic_dir(final) as tmp:
        index = faiss.IndexFlatIP(matrix.shape[1])
        index.add(np.ascontiguousarray(matrix))
        faiss.write_index(index, str(tmp / "index.faiss"))
        write_parquet(pa.table({"entry": entries, "n_definitions": counts.astype(np.int32)}, schema=_ENTRIES_SCHEMA),
                      tmp / "entries.parquet")
        meta = {**spec.__dict__, "dictionary_hash": dict_hash, "n_entries": len(entries), "dim": int(matrix.shape[1])}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
    name = dictionary if isinstance(dictionary, str) else None
    cat.register_artifact(key, "revdict_index", final, hash_path(final), name=name,
                          input_hashes={"dictionary": dict_hash}, config=meta)
    return RevdictIndex(final)
