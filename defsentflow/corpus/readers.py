"""Read documents from text files, JSONL and Parquet; keep rejected input with a reason.

Encoding policy: text is UTF-8 (a BOM is dropped). A line that is not valid UTF-8 is decoded
with U+FFFD replacement characters and the document is KEPT; the line is recorded in the
quarantine with ``rejected=False`` and its raw bytes escaped (``\\xa3``), so nothing is lost and
the repair is visible. (The BBC corpus has one such file, ``sport/199.txt``, with a Latin-1 pound
sign; dropping a whole article for one byte would lose more than it protects.) Whole files or
records that cannot be used (empty, unreadable, bad JSON, no ``text``) are rejected
(``rejected=True``) and counted as quarantined documents.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from defsentflow.config_tools import CorpusFormat
from defsentflow.corpus.gutenberg import strip_gutenberg
from defsentflow.storage.bounded_json import NestingError, loads_bounded

__all__ = ["CorpusFormat", "Document", "QuarantineRecord", "ReadResult", "check_format", "read_documents", "list_input_files"]

log = logging.getLogger(__name__)

FORMATS: tuple[str, ...] = get_args(CorpusFormat)

_SUFFIXES = {".txt": "text", ".text": "text", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
# Files that describe a corpus rather than belong to it (the BBC folder has a README.TXT).
_NOT_DOCUMENTS = ("README", "LICENSE", "LICENCE", "COPYING", "CITATION")
_RAW_LIMIT = 2000


@dataclass(frozen=True)
class Document:
    """One document: its id, its text (Gutenberg markers stripped) and where it came from."""

    doc_id: str
    text: str
    file: str


@dataclass(frozen=True)
class QuarantineRecord:
    """Input that was rejected (``rejected=True``) or repaired and kept (``rejected=False``)."""

    file: str
    line: int | None
    reason: str
    raw: str | None = None
    rejected: bool = True


@dataclass(frozen=True)
class ReadResult:
    documents: list[Document]
    quarantine: list[QuarantineRecord]
    skipped: list[str] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return sum(q.rejected for q in self.quarantine)

    @property
    def repaired(self) -> int:
        return sum(not q.rejected for q in self.quarantine)


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown corpus format {fmt!r}; valid: {', '.join(FORMATS)}")
    return fmt


def _is_document_file(path: Path) -> bool:
    name = path.name
    return not name.startswith(".") and not path.stem.upper().startswith(_NOT_DOCUMENTS)


def list_input_files(paths: list[str | os.PathLike], fmt: CorpusFormat = "auto") -> tuple[list[tuple[Path, str, str]], list[str]]:
    """Expand input paths to ``(file, format, doc_id prefix)`` in a stable order.

    A directory contributes its files recursively, sorted by relative path; with ``fmt="auto"`` a
    file's format comes from its suffix and files with other suffixes are skipped (returned as the
    second value). README/LICENSE files and hidden files are never documents.

    Raises:
        FileNotFoundError: an input path does not exist.
    """
    check_format(fmt)
    files: list[tuple[Path, str, str]] = []
    skipped: list[str] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise FileNotFoundError(f"corpus source not found: {p}")
        if p.is_dir():
            if not os.access(p, os.R_OK | os.X_OK):
                raise PermissionError(f"corpus source not readable: {p}")
            members = sorted((f for f in p.rglob("*") if f.is_file() or f.is_symlink()), key=lambda f: f.relative_to(p).as_posix())
            for f in members:
                rel = f.relative_to(p)
                if any(part.startswith(".") for part in rel.parts) or not _is_document_file(f):
                    skipped.append(str(f))
                    continue
                kind = fmt if fmt != "auto" else _SUFFIXES.get(f.suffix.lower())
                if kind is None:
                    skipped.append(str(f))
                    continue
                files.append((f, kind, f"{p.name}/{rel.as_posix()}"))
        else:
            if not os.access(p, os.R_OK):
                raise PermissionError(f"corpus source not readable: {p}")
            kind = fmt if fmt != "auto" else _SUFFIXES.get(p.suffix.lower(), "text")
            files.append((p, kind, p.name))
    return files, skipped


def _decode(data: bytes, file: str) -> tuple[str, list[QuarantineRecord]]:
    """UTF-8 decode; invalid lines are decoded with replacement and recorded (not rejected)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    lines, repaired = [], []
    for i, line in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            lines.append(line.decode("utf-8", errors="replace"))
            repaired.append(QuarantineRecord(
                file, i, f"invalid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}); "
                "decoded with U+FFFD, document kept", line.decode("utf-8", errors="backslashreplace")[:_RAW_LIMIT], False))
    return "\n".join(lines), repaired


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return strip_gutenberg(text)[0].strip()


def _load(path: Path) -> Generator[QuarantineRecord, None, tuple[bytes, str] | None]:
    """Yields the file's quarantine records (unreadable, repaired bytes); returns (bytes, text) or None."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        yield QuarantineRecord(str(path), None, f"unreadable file: {exc.strerror or exc}")
        return None
    text, repaired = _decode(data, str(path))
    yield from repaired
    return data, text


def _read_text(path: Path, doc_id: str) -> Iterator[Document | QuarantineRecord]:
    loaded = yield from _load(path)
    if loaded is None:
        return
    data, text = loaded
    text = _clean(text)
    if not text:
        yield QuarantineRecord(str(path), None, "empty file" if not data.strip() else "no text after stripping markers",
                               data[:_RAW_LIMIT].decode("utf-8", errors="backslashreplace"))
        return
    yield Document(doc_id, text, str(path))


def _record_doc(rec: object, path: Path, line: int, default_id: str, raw: str) -> Document | QuarantineRecord:
    if not isinstance(rec, dict):
        return QuarantineRecord(str(path), line, f"record is a {type(rec).__name__}, not an object with 'text'", raw)
    text = rec.get("text")
    if not isinstance(text, str):
        reason = "missing 'text'" if text is None else f"'text' is a {type(text).__name__}, not a string"
        return QuarantineRecord(str(path), line, reason, raw)
    text = _clean(text)
    if not text:
        return QuarantineRecord(str(path), line, "empty 'text'", raw)
    rid = rec.get("id")
    return Document(default_id if rid is None else str(rid), text, str(path))


def _read_jsonl(path: Path, prefix: str) -> Iterator[Document | QuarantineRecord]:
    loaded = yield from _load(path)
    if loaded is None:
        return
    text = loaded[1]
    n = 0
    for i, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        n += 1
        try:
            rec = loads_bounded(line)
        except json.JSONDecodeError as exc:
            yield QuarantineRecord(str(path), i, f"invalid JSON: {exc.msg} (column {exc.colno})", line[:_RAW_LIMIT])
            continue
        except NestingError as exc:
            yield QuarantineRecord(str(path), i, f"invalid JSON: {exc}", line[:_RAW_LIMIT])
            continue
        yield _record_doc(rec, path, i, f"{prefix}:{i}", line[:_RAW_LIMIT])
    if n == 0:
        yield QuarantineRecord(str(path), None, "empty file", None)


def _read_parquet(path: Path, prefix: str) -> Iterator[Document | QuarantineRecord]:
    import pyarrow as pa  # lazy: pyarrow loads only where it is used
    import pyarrow.parquet as pq  # lazy: pyarrow loads only where it is used

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        yield QuarantineRecord(str(path), None, f"unreadable Parquet: {exc}")
        return
    if "text" not in table.column_names:
        yield QuarantineRecord(str(path), None, f"no 'text' column (columns: {', '.join(table.column_names)})")
        return
    if table.num_rows == 0:
        yield QuarantineRecord(str(path), None, "empty file")
        return
    cols = ["text"] + (["id"] if "id" in table.column_names else [])
    for i, rec in enumerate(table.select(cols).to_pylist(), start=1):
        raw = json.dumps(rec, default=str)[:_RAW_LIMIT]
        yield _record_doc(rec, path, i, f"{prefix}:{i}", raw)


_READERS = {"text": _read_text, "jsonl": _read_jsonl, "parquet": _read_parquet}


def read_documents(paths: list[str | os.PathLike], fmt: CorpusFormat = "auto") -> ReadResult:
    """Read every document under ``paths``; bad files and records go to the quarantine list.

    Document ids: ``<dir name>/<relative path>`` for files found in a directory, the file name
    for a file given directly, a record's ``id`` (JSONL, Parquet) or ``<file id>:<line or row>``.
    A repeated id is rejected, naming the file where it was first seen.

    Raises:
        FileNotFoundError, PermissionError: an input path is missing or unreadable.
        ValueError: an unknown format.
    """
    files, skipped = list_input_files(paths, fmt)
    docs: list[Document] = []
    quarantine: list[QuarantineRecord] = []
    seen: dict[str, str] = {}
    for path, kind, doc_id in files:
        for item in _READERS[kind](path, doc_id):
            if isinstance(item, QuarantineRecord):
                quarantine.append(item)
            elif item.doc_id in seen:
                quarantine.append(QuarantineRecord(item.file, None, f"duplicate doc_id {item.doc_id!r} (first in {seen[item.doc_id]})",
                                                   item.text[:_RAW_LIMIT]))
            else:
                seen[item.doc_id] = item.file
                docs.append(item)
    for s in skipped:
        log.debug("skipped (not a document): %s", s)
    return ReadResult(docs, quarantine, skipped)
