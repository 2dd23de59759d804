"""Retrieval indexes over a corpus's chunks, built once and cached as catalog artifacts (kind 'index')."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from defsentflow.config_tools import RetrievalKind
from defsentflow.corpus import load_chunks, resolve_corpus
from defsentflow.retrieval.bm25 import Bm25Config, Bm25Index
from defsentflow.retrieval.dense import DenseConfig, DenseIndex, Encoder
from defsentflow.retrieval.tfidf import TfidfConfig, TfidfIndex
from defsentflow.storage import Catalog, atomic_dir, code_version, combine_hashes, hash_config, hash_path, root_place
from defsentflow.storage.integrity import verify_artifact_files

__all__ = ["IndexKind", "INDEX_KINDS", "IndexArtifact", "build_index", "load_index", "open_index"]

log = logging.getLogger(__name__)

IndexKind = RetrievalKind
INDEX_KINDS: tuple[str, ...] = get_args(IndexKind)
Index = Bm25Index | TfidfIndex | DenseIndex
_CLASSES = {"bm25": (Bm25Index, Bm25Config), "tfidf": (TfidfIndex, TfidfConfig), "dense": (DenseIndex, DenseConfig)}


@dataclass(frozen=True)
class IndexArtifact:
    """A built index on disk. ``load()`` opens it (a dense index needs the same encoder again)."""

    key: str
    kind: str
    corpus_name: str
    corpus_key: str
    path: Path
    documents: int
    cached: bool
    seconds: float

    def load(self, encoder: Encoder | None = None) -> Index:
        return _open(self.kind, self.path, encoder)


def _open(kind: str, path: Path, encoder: Encoder | None) -> Index:
    if kind == "dense":
        return DenseIndex.load(path, encoder)
    return _CLASSES[kind][0].load(path)


def _check_kind(kind: str) -> str:
    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {kind!r}; valid: {', '.join(INDEX_KINDS)}")
    return kind


def build_index(kind: IndexKind, corpus_name: str, *, root: str | os.PathLike | None = None,
                config: Bm25Config | TfidfConfig | DenseConfig | None = None, encoder: Encoder | None = None,
                encoder_id: str | None = None, run_id: str | None = None) -> IndexArtifact:
    """Build (or find cached) an index over the chunks of a corpus.

    Args:
        kind: ``bm25``, ``tfidf`` or ``dense``.
        corpus_name: a corpus name (its newest artifact) or a corpus artifact key.
        root: the data root.
        config: the index's config dataclass (defaults otherwise).
        encoder: for ``dense``: texts -> float32 array.
        encoder_id: for ``dense``: a stable identity of the encoder (model id + pooling), part of the
            cache key since a function cannot be hashed.
        run_id: the catalog run, if any.

    Returns:
        An :class:`IndexArtifact`; ids returned by its index's ``search`` are ``chunk_id`` values.

    Example:
        >>> art = build_index("bm25", "bbc")
        >>> ids, scores = art.load().search(["oil prices rise"], top_n=5)
    """
    _check_kind(kind)
    cls, config_cls = _CLASSES[kind]
    config = config or config_cls()
    if not isinstance(config, config_cls):
        raise TypeError(f"a {kind} index takes a {config_cls.__name__}, not {type(config).__name__}")
    if kind == "dense" and (encoder is None or not encoder_id):
        raise ValueError("a dense index needs encoder= (texts -> float32 array) and encoder_id= (for the cache key)")
    t0 = time.perf_counter()
    corpus = resolve_corpus(corpus_name, root)
    name = corpus["name"]
    key = combine_hashes(["index", kind, corpus["artifact_key"], hash_config(config), encoder_id or "", code_version()])
    cat = Catalog(root)
    final = root_place(cat.root, "indexes", name, kind, key)
    art = cat.artifact(key)
    if art is not None:
        log.info("index %s over %s: cached (%s)", kind, name, key)
        return IndexArtifact(key, kind, name, corpus["artifact_key"], final, art["meta"]["documents"], True, time.perf_counter() - t0)

    texts = load_chunks(corpus["artifact_key"], root=root).column("text").to_pylist()
    index = cls(encoder, config) if kind == "dense" else cls(config)
    index.build(texts)
    with atomic_dir(final) as tmp:
        index.save(tmp)
    meta = {"kind": kind, "documents": len(texts), "corpus_key": corpus["artifact_key"], "encoder_id": encoder_id}
    cat.register_artifact(key, "index", final, hash_path(final), name=f"{name}/{kind}",
                          input_hashes={"corpus": corpus["artifact_key"]}, config=dataclasses.asdict(config),
                          run_id=run_id, meta=meta)
    seconds = time.perf_counter() - t0
    log.info("index %s over %s: %d chunks (%.1fs)", kind, name, len(texts), seconds)
    return IndexArtifact(key, kind, name, corpus["artifact_key"], final, len(texts), False, seconds)


def open_index(kind: str, path: str | os.PathLike, encoder: Encoder | None = None) -> Index:
    """Open an index artifact by its kind and directory (no catalog: what a Dask worker does)."""
    return _open(_check_kind(kind), Path(path), encoder)


def load_index(key: str, *, root: str | os.PathLike | None = None, encoder: Encoder | None = None) -> Index:
    """Open an index artifact by its key (see :class:`IndexArtifact`)."""
    art = Catalog(root).artifact(key)
    if art is None or art["kind"] != "index":
        raise LookupError(f"no index artifact {key!r}")

    verify_artifact_files(art["path"])  # full hashes against its record, once per process
    return _open(art["meta"]["kind"], Path(art["path"]), encoder)
