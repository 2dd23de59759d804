"""Data root, atomic artifact writes, content hashes and the DuckDB catalog."""

from __future__ import annotations

from defsentflow.storage.atomic import (
    atomic_dir,
    atomic_path,
    clean_stale_temporaries,
    write_json,
    write_npy,
    write_parquet,
)
from defsentflow.storage.catalog import Catalog, CatalogLockedError
from defsentflow.storage.hashing import (
    code_version,
    combine_hashes,
    hash_bytes,
    hash_config,
    hash_file,
    hash_path,
    hash_text,
)
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN, check_identifier, under_root
from defsentflow.storage.paths import data_root, repo_root, root_place, sample_dir, sql_dir
from defsentflow.storage.rebuild import heal_catalog, rebuild_catalog

__all__ = [
    "IDENTIFIER_PATTERN",
    "Catalog",
    "CatalogLockedError",
    "atomic_dir",
    "atomic_path",
    "check_identifier",
    "clean_stale_temporaries",
    "code_version",
    "combine_hashes",
    "data_root",
    "rebuild_catalog",
    "hash_bytes",
    "hash_config",
    "hash_file",
    "hash_path",
    "hash_text",
    "heal_catalog",
    "repo_root",
    "root_place",
    "sample_dir",
    "sql_dir",
    "under_root",
    "write_json",
    "write_npy",
    "write_parquet",
]
