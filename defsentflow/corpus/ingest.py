"""Ingest a corpus into a content-addressed Parquet artifact and register it in the catalog.

Layout: ``<data root>/parquet/corpora/<name>/<key>/`` with ``sentences.parquet``,
``chunks.parquet``, ``quarantine.parquet`` and ``manifest.json``. The key hashes the name, the
input files' contents, the config and the code version, so the same inputs are a cache hit and
nothing is rewritten.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.corpus.chunks import build_tables
from defsentflow.corpus.readers import CorpusFormat, QuarantineRecord, check_format, read_documents
from defsentflow.corpus.schemas import CHUNKS_SCHEMA, QUARANTINE_SCHEMA, SENTENCES_SCHEMA
from defsentflow.corpus.segment import segment_documents
from defsentflow.storage import (
    Catalog,
    atomic_dir,
    code_version,
    combine_hashes,
    hash_config,
    hash_path,
    write_json,
)
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN
from defsentflow.storage.paths import root_place

__all__ = ["CorpusConfig", "IngestResult", "corpus_key", "ingest_corpus", "load_sentences", "load_chunks", "resolve_corpus"]

log = logging.getLogger(__name__)

QUARANTINE_SOURCE = "corpus"
_NAME = re.compile(IDENTIFIER_PATTERN)


@dataclass(frozen=True)
class CorpusConfig:
    """How a corpus is read and cut. Part of the artifact key."""

    fmt: CorpusFormat = "auto"
    chunk_sentences: int = 8
    splitter: str = "pysbd"

    def __post_init__(self) -> None:
        check_format(self.fmt)
        if self.chunk_sentences < 1:
            raise ValueError(f"chunk_sentences must be >= 1, got {self.chunk_sentences}")


@dataclass(frozen=True)
class IngestResult:
    """What an ingest produced (or found already there, ``cached=True``)."""

    name: str
    key: str
    path: Path
    documents: int
    paragraphs: int
    sentences: int
    chunks: int
    quarantined: int
    documents_read: int
    repaired: int
    cached: bool
    seconds: float

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["path"] = str(self.path)
        return d


def _splitter_version() -> str:
    import pysbd  # lazy: the sentence splitter loads only when a corpus is ingested

    return f"pysbd-{pysbd.__version__}"


def corpus_key(paths: Sequence[str | os.PathLike], name: str, config: CorpusConfig = CorpusConfig()) -> str:
    """The artifact key: name + input contents (in the given order) + config + code version."""
    return _key(name, [hash_path(p) for p in paths], config)


def _key(name: str, input_hashes: list[str], config: CorpusConfig) -> str:
    return combine_hashes(["corpus", name, *input_hashes, hash_config(config), _splitter_version(), code_version()])


def _check_name(name: str) -> str:
    if not _NAME.fullmatch(name or ""):
        raise ValueError(f"invalid corpus name {name!r}: use letters, digits, '.', '_' or '-' (like 'bbc')")
    return name


def _result_from_row(row: dict, path: Path, cached: bool, seconds: float) -> IngestResult:
    return IngestResult(row["name"], row["artifact_key"], path, row["documents"], row["paragraphs"], row["sentences"],
                        row["chunks"], row["quarantined"], row["documents_read"], row["repaired"], cached, seconds)


def ingest_corpus(paths: Sequence[str | os.PathLike] | str | os.PathLike, name: str, *, fmt: CorpusFormat = "auto",
                  root: str | os.PathLike | None = None, chunk_sentences: int = 8, workers: int | None = None,
                  run_id: str | None = None) -> IngestResult:
    """Read, clean, segment and chunk a corpus; write it as Parquet; register it.

    Args:
        paths: directories of text/JSONL/Parquet files, or single files.
        name: the corpus name (catalog ``corpora.name``; a directory name in the data root).
        fmt: ``auto`` (by file suffix), ``text``, ``jsonl`` or ``parquet``.
        root: the data root (default :func:`defsentflow.storage.data_root`).
        chunk_sentences: the most sentences in one chunk.
        workers: segmentation processes (default 2, or fewer cores).
        run_id: the catalog run this artifact belongs to, if any.

    Returns:
        An :class:`IngestResult`; ``cached`` is True when the artifact already existed.

    Raises:
        FileNotFoundError, PermissionError: a source path is missing or unreadable.
        ValueError: a bad name, format, or no usable document at all. Nothing is written then.

    Example:
        >>> res = ingest_corpus(["data/bbc"], "bbc")
        >>> load_sentences("bbc").num_rows == res.sentences
        True
    """
    t0 = time.perf_counter()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no corpus source given")
    _check_name(name)
    config = CorpusConfig(fmt=fmt, chunk_sentences=chunk_sentences)
    for p in paths:  # fail before hashing anything
        if not p.exists():
            raise FileNotFoundError(f"corpus source not found: {p}")
    sources = [{"path": str(p.resolve()), "hash": hash_path(p)} for p in paths]
    key = _key(name, [s["hash"] for s in sources], config)
    cat = Catalog(root)
    final = root_place(cat.root, "corpora", name, key)
    if cat.artifact(key) is not None and (final / "sentences.parquet").exists() and (final / "chunks.parquet").exists():
        rows = cat.query("SELECT * FROM corpora WHERE artifact_key = ?", [key])
        if rows:
            log.info("corpus %s: cached (%s)", name, key)
            return _result_from_row(rows[0], final, True, time.perf_counter() - t0)

    read = read_documents(paths, fmt)
    if not read.documents:
        reasons = "; ".join(f"{q.file}: {q.reason}" for q in read.quarantine[:5]) or "no document files found"
        raise ValueError(f"corpus {name!r}: no usable document in {', '.join(map(str, paths))} ({reasons})")
    segmented = segment_documents([d.text for d in read.documents], workers=workers)
    sentences, chunks = build_tables([d.doc_id for d in read.documents], segmented, chunk_sentences)
    quarantine = _quarantine_table(read.quarantine)
    paragraphs = sum(len(d) for d in segmented)
    counts = dict(documents=len(read.documents), paragraphs=paragraphs, sentences=sentences.num_rows,
                  chunks=chunks.num_rows, quarantined=read.rejected, documents_read=len(read.documents) + read.rejected,
                  repaired=read.repaired)

    with atomic_dir(final) as tmp:
        pq.write_table(sentences, tmp / "sentences.parquet", compression="zstd")
        pq.write_table(chunks, tmp / "chunks.parquet", compression="zstd")
        pq.write_table(quarantine, tmp / "quarantine.parquet", compression="zstd")
        write_json({"name": name, "key": key, "config": dataclasses.asdict(config), "sources": sources,
                    "skipped": read.skipped, **counts}, tmp / "manifest.json")
    content_hash = hash_path(final)
    with cat.transaction() as con:
        cat.register_artifact(key, "corpus", final, content_hash, name=name, input_hashes={s["path"]: s["hash"] for s in sources},
                              config=dataclasses.asdict(config), run_id=run_id, meta=counts, con=con)
        con.execute("DELETE FROM corpora WHERE artifact_key = ?", [key])
        con.execute(
            "INSERT INTO corpora (name, artifact_key, documents, paragraphs, sentences, chunks, quarantined, documents_read, "
            "repaired, sources) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [name, key, counts["documents"], counts["paragraphs"], counts["sentences"], counts["chunks"], counts["quarantined"],
             counts["documents_read"], counts["repaired"], json.dumps(sources)],
        )
        # The quarantine table describes the newest ingest of this corpus name.
        con.execute("DELETE FROM quarantine WHERE dataset = ? AND source = ?", [name, QUARANTINE_SOURCE])
        if quarantine.num_rows:
            con.register("_corpus_quarantine", quarantine)
            con.execute("INSERT INTO quarantine (dataset, source, file, line, reason, raw) "
                        "SELECT ?, ?, file, line, reason, raw FROM _corpus_quarantine", [name, QUARANTINE_SOURCE])
            con.unregister("_corpus_quarantine")
    seconds = time.perf_counter() - t0
    log.info("corpus %s: %d documents, %d sentences, %d chunks, %d quarantined (%.1fs)", name, counts["documents"],
             counts["sentences"], counts["chunks"], counts["quarantined"], seconds)
    return IngestResult(name, key, final, cached=False, seconds=seconds, **counts)


def _quarantine_table(records: list[QuarantineRecord]) -> pa.Table:
    return pa.Table.from_pylist([dataclasses.asdict(q) for q in records], schema=QUARANTINE_SCHEMA)


def resolve_corpus(name_or_key: str, root: str | os.PathLike | None = None) -> dict:
    """The catalog artifact for a corpus key, or the newest artifact of a corpus name.

    Raises:
        LookupError: no such corpus (or its files are gone).
    """
    cat = Catalog(root)
    art = cat.artifact(name_or_key)
    if art is None or art["kind"] != "corpus":
        art = cat.latest_artifact("corpus", name_or_key)
    if art is None:
        raise LookupError(f"no corpus {name_or_key!r} in {cat.path}; ingest one with `defsentflow ingest corpus PATH --name NAME`")
    return art


def load_sentences(name_or_key: str, *, root: str | os.PathLike | None = None) -> pa.Table:
    """The sentences table (:data:`SENTENCES_SCHEMA`) of a corpus name (newest) or key."""
    return pq.read_table(Path(resolve_corpus(name_or_key, root)["path"]) / "sentences.parquet", schema=SENTENCES_SCHEMA)


def load_chunks(name_or_key: str, *, root: str | os.PathLike | None = None) -> pa.Table:
    """The chunks table (:data:`CHUNKS_SCHEMA`) of a corpus name (newest) or key."""
    return pq.read_table(Path(resolve_corpus(name_or_key, root)["path"]) / "chunks.parquet", schema=CHUNKS_SCHEMA)
