"""Where things live: the data root and the SQL directory."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_root", "sql_dir", "repo_root", "sample_dir"]

_PACKAGE = Path(__file__).resolve().parents[1]


def repo_root() -> Path:
    """The source checkout this package runs from (editable installs)."""
    return _PACKAGE.parent


def data_root(override: str | os.PathLike | None = None, *, create: bool = True) -> Path:
    """The data root: ``override`` (from a config), else ``$DEFSENTFLOW_HOME``, else ``./storage``.

    The directory is created if missing (unless ``create`` is false). It holds ``parquet/``,
    ``models/``, ``cache/`` and ``catalog.duckdb``.
    """
    if override:
        root = Path(override)
    elif os.environ.get("DEFSENTFLOW_HOME"):
        root = Path(os.environ["DEFSENTFLOW_HOME"])
    else:
        root = Path.cwd() / "storage"
    root = root.expanduser().resolve()
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root


def sql_dir() -> Path:
    """The directory of numbered DDL files (``sql/`` at the repository root)."""
    env = os.environ.get("DEFSENTFLOW_SQL_DIR")
    path = Path(env) if env else repo_root() / "sql"
    if not path.is_dir():
        raise FileNotFoundError(f"SQL directory not found: {path} (set DEFSENTFLOW_SQL_DIR)")
    return path


def sample_dir() -> Path:
    """The small, licence-clean sample data shipped inside the package."""
    return _PACKAGE / "sample"
