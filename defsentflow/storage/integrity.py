"""Full-hash checks of the model and index files a command loads, once per process.

A same-size change (4 KiB overwritten inside ``model.safetensors`` or ``index.faiss``) keeps a
file's size and often its first and last 64 KiB, so the quick check that guards cache hits does
not see it. Before a command encodes, evaluates, searches or serves with a registered model or
index, :func:`verify_artifact_files` re-hashes its files against the manifest in the artifact's
on-disk record (:mod:`defsentflow.storage.records`); each artifact is hashed once per process.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from defsentflow.storage.manifest import full_check, manifest_hash
from defsentflow.storage.records import read_record

__all__ = ["ArtifactChangedError", "verify_once", "verify_artifact_files"]

_VERIFIED: set[tuple[str, str]] = set()
_LOCK = threading.Lock()


class ArtifactChangedError(ValueError):
    """A registered artifact's files differ from its manifest (one line: the file and the fix)."""


def verify_once(path: str | os.PathLike, manifest: Any) -> None:
    """Compare every file of the artifact at ``path`` with ``manifest`` by full content hash, the
    first time this process sees this (path, manifest).

    Raises:
        ArtifactChangedError: a file is missing, added, resized or changed.
    """
    p = Path(path).resolve()
    key = (str(p), manifest_hash(manifest if isinstance(manifest, dict) else __import__("json").loads(manifest)))
    with _LOCK:
        if key in _VERIFIED:
            return
    problem = full_check(p, manifest)
    if problem:
        raise ArtifactChangedError(f"{problem}: the artifact changed after it was registered (damaged or edited); "
                                   "`defsentflow verify` lists changed artifacts, re-running its stage rebuilds it")
    with _LOCK:
        _VERIFIED.add(key)


def verify_artifact_files(path: str | os.PathLike) -> bool:
    """Check the artifact at ``path`` against the manifest of its record (:func:`verify_once`);
    False when it has no record (a model outside the data root, a Hugging Face id)."""
    p = Path(path)
    if not p.exists():
        return False
    record = read_record(p)
    if record is None or not record.get("manifest"):
        return False
    verify_once(p, record["manifest"])
    return True
