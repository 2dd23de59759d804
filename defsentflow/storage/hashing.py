"""Content hashes: files, directories, texts, configs and the code version."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from defsentflow import __version__

__all__ = ["hash_bytes", "hash_text", "hash_file", "hash_path", "hash_config", "code_version", "combine_hashes",
           "model_folder_hash"]

_CHUNK = 1 << 20


def hash_bytes(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def hash_text(text: str) -> str:
    return hash_bytes(text.encode("utf-8"))


def hash_file(path: str | os.PathLike) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def hash_path(path: str | os.PathLike) -> str:
    """Hash a file, or a directory tree by relative names and file contents.

    File stats are not used, so a copy of the same tree on another machine has the same hash.
    """
    p = Path(path)
    if p.is_file():
        return hash_file(p)
    if not p.is_dir():
        raise FileNotFoundError(f"no such file or directory: {p}")
    h = hashlib.blake2b(digest_size=16)
    for f in sorted(x for x in p.rglob("*") if x.is_file()):
        rel = f.relative_to(p).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue
        h.update(rel.encode())
        h.update(b"\0")
        h.update(hash_file(f).encode())
    return h.hexdigest()


MODEL_FILE_SUFFIXES = frozenset({".safetensors", ".bin", ".json", ".txt", ".model"})


@lru_cache(maxsize=64)
def _folder_hash(path: str, stamp: tuple) -> str:
    p = Path(path)
    # hidden files are ours (the artifact record, amended with metrics later), not the model's
    files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")
                   and f.suffix in MODEL_FILE_SUFFIXES)
    return combine_hashes(f"{f.name}:{hash_file(f)}" for f in files)


def model_folder_hash(path: str | os.PathLike) -> str:
    """Content hash of a model folder (weights, config, tokenizer files at its top level; hidden files
    left out), computed once per process for the same names, sizes and modification times."""
    p = Path(path)
    stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(p.iterdir())
                  if f.is_file() and not f.name.startswith("."))
    return _folder_hash(str(p), stamp)


def hash_config(config: Any) -> str:
    """Stable hash of a JSON-serialisable config (dataclass, pydantic model or mapping)."""
    if hasattr(config, "model_dump"):
        config = config.model_dump(mode="json")
    elif hasattr(config, "__dataclass_fields__"):
        config = dataclasses.asdict(config)
    return hash_text(json.dumps(config, sort_keys=True, default=str))


def combine_hashes(parts: Iterable[str]) -> str:
    return hash_text("\x1f".join(parts))


@lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus a hash of the library's Python sources.

    Any change to the library's code changes every stage key, so a cached artifact is never
    reused across code that could compute it differently.
    """
    pkg = Path(__file__).resolve().parents[1]
    h = hashlib.blake2b(digest_size=8)
    for f in sorted(pkg.rglob("*.py")):
        h.update(f.relative_to(pkg).as_posix().encode())
        h.update(f.read_bytes())
    return f"{__version__}+{h.hexdigest()}"
