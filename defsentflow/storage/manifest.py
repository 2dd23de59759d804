"""Artifact manifests: what a registered artifact's files were, checked before it is reused.

At registration the catalog stores, per file, its size, a quick hash (the first and last 64 KiB,
which for Parquet holds the footer with every row group's offsets and statistics, so a rewrite
changes it) and its full content hash. Before reuse, :func:`quick_check` compares the file list
and sizes (a ``stat`` each) and the quick hashes: cheap enough for every cache hit.
:func:`full_check` (``defsentflow verify``) re-hashes every byte.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from defsentflow.storage.hashing import hash_file, hash_text

__all__ = ["artifact_manifest", "manifest_hash", "quick_check", "full_check"]

_EDGE = 64 * 1024


def _files(path: Path) -> dict[str, Path]:
    """Files of an artifact by relative name (hidden ones skipped, as :func:`hash_path` does)."""
    if path.is_file():
        return {path.name: path}
    out = {}
    for f in sorted(x for x in path.rglob("*") if x.is_file()):
        rel = f.relative_to(path).as_posix()
        if not (rel.startswith(".") or "/." in rel):
            out[rel] = f
    return out


def _quick_hash(path: Path, size: int) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        if size <= 2 * _EDGE:
            h.update(fh.read())
        else:
            h.update(fh.read(_EDGE))
            fh.seek(size - _EDGE)
            h.update(fh.read(_EDGE))
    return h.hexdigest()


def artifact_manifest(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """``{relative name: {"size", "quick", "hash"}}`` of the files of an artifact (file or directory)."""
    out = {}
    for rel, f in _files(Path(path)).items():
        size = f.stat().st_size
        out[rel] = {"size": size, "quick": _quick_hash(f, size), "hash": hash_file(f)}
    return out


def manifest_hash(manifest: dict[str, dict[str, Any]]) -> str:
    """Hash of the names, sizes and quick hashes (what :func:`quick_check` recomputes)."""
    return hash_text(json.dumps({k: [v["size"], v["quick"]] for k, v in manifest.items()}, sort_keys=True))


def _load(manifest: Any) -> dict[str, dict[str, Any]]:
    return json.loads(manifest) if isinstance(manifest, str) else dict(manifest)


def _compare_names_sizes(path: Path, manifest: dict[str, dict[str, Any]]) -> tuple[str | None, dict[str, Path]]:
    files = _files(path) if path.exists() else {}
    if not files:
        return f"{path}: missing", files
    missing = sorted(set(manifest) - set(files))
    extra = sorted(set(files) - set(manifest))
    if missing or extra:
        return f"{path}: files differ (missing {missing[:3]}, unexpected {extra[:3]})", files
    for rel, f in files.items():
        size = f.stat().st_size
        if size != manifest[rel]["size"]:
            return f"{path}: {rel} is {size} bytes, registered as {manifest[rel]['size']}", files
    return None, files


def quick_check(path: str | os.PathLike, manifest: Any) -> str | None:
    """None if the artifact at ``path`` matches its registered manifest by names, sizes and quick
    hashes; else what differs (one line)."""
    manifest = _load(manifest)
    problem, files = _compare_names_sizes(Path(path), manifest)
    if problem:
        return problem
    for rel, f in files.items():
        if _quick_hash(f, manifest[rel]["size"]) != manifest[rel]["quick"]:
            return f"{path}: {rel} changed since it was registered"
    return None


def full_check(path: str | os.PathLike, manifest: Any) -> str | None:
    """Like :func:`quick_check`, comparing the full content hash of every file."""
    manifest = _load(manifest)
    problem, files = _compare_names_sizes(Path(path), manifest)
    if problem:
        return problem
    for rel, f in files.items():
        if hash_file(f) != manifest[rel]["hash"]:
            return f"{path}: {rel} content differs from its registered hash"
    return None
