"""A new catalog file as a copy of this process's template: the schema is applied once per process.

Applying the numbered DDL files and the leaderboard view to an empty DuckDB file costs about 0.2 s
of CPU (DuckDB binds every table, macro and view; a process start of DuckDB alone is 15 ms). A
process that creates many data roots (a sweep's points, a test session) pays it once: the first new
catalog builds the template in a temporary directory through :func:`~defsentflow.storage.schema.migrate`
itself, and each new catalog after it is a byte copy, written beside the target and hard-linked into
place, so a crash leaves no partial catalog and a catalog another process created meanwhile is never
replaced. The template is keyed by the DuckDB version, the storage format and the DDL's content, so
a changed DDL file builds a new one.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import duckdb

from defsentflow.storage.hashing import hash_text
from defsentflow.storage.schema import ddl_files, migrate
from defsentflow.storage.swap import create_file_once

__all__ = ["create_catalog_file"]

_LOCK = threading.Lock()
_TEMPLATE: dict[tuple[str, str, str], bytes] = {}


def _template(storage_version: str) -> bytes:
    """The bytes of an empty catalog with every DDL file applied (built once per process and key)."""
    key = (duckdb.__version__, storage_version, hash_text("".join(sha for _, sha, _ in ddl_files())))
    with _LOCK:
        if key not in _TEMPLATE:
            with tempfile.TemporaryDirectory(prefix="defsentflow-catalog-") as tmp:
                path = Path(tmp) / "catalog.duckdb"
                con = duckdb.connect(str(path), config={"storage_compatibility_version": storage_version})
                try:
                    migrate(con)
                finally:
                    con.close()  # checkpointed: the file alone is the database
                _TEMPLATE.clear()
                _TEMPLATE[key] = path.read_bytes()
        return _TEMPLATE[key]


def create_catalog_file(path: Path, storage_version: str) -> bool:
    """Put a new catalog with the whole schema at ``path`` unless a file is there; whether it did.

    False, leaving nothing behind, when another process created the catalog first, a DDL file fails
    (applied in place it fails there, the files before it committed) or the directory cannot take the
    copy (a read-only root, a file system without hard links): the caller then opens ``path`` as it
    would have without a template, and gets DuckDB's own error where that fails.
    """
    try:
        data = _template(storage_version)
    except duckdb.Error:
        return False  # a DDL file that fails: applied in place, it fails there (earlier files kept, as always)

    def write(tmp: Path) -> None:  # mode 0o666 less the umask, as DuckDB creates a file (tempfile's would be 0o600)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    return create_file_once(path, write)
