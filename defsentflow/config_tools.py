"""Small helpers shared by every YAML config of the project (pipeline, PST, pretrain, harvest, sweep).

A leaf module (it imports nothing from the project but ``storage.paths``) so that each config
module can use it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Hashable, Sequence

import yaml
from pydantic import ValidationError

__all__ = ["format_errors", "read_yaml_mapping", "require_distinct", "resolve_path"]


def format_errors(exc: ValidationError, prefix: str | None = None) -> str:
    """``key.path: message; ...`` for a pydantic error (what config errors print).

    ``prefix`` is put in front of every key path (the section a sub-model was validated for).
    """
    def loc(e: dict) -> str:
        parts = ((prefix,) if prefix else ()) + tuple(str(x) for x in e["loc"])
        return ".".join(parts) or "<top>"

    return "; ".join(f"{loc(e)}: {e['msg']}" for e in exc.errors())


def read_yaml_mapping(path: str | os.PathLike, *, what: str = "file") -> dict[str, Any]:
    """A YAML file whose top level is a mapping; errors name the file.

    Raises:
        FileNotFoundError: no such file (the message says which ``what``).
        ValueError: not valid YAML, or not a mapping at the top level.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{what} not found: {p}")
    try:
        data: Any = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping at the top level")
    return data


def require_distinct(values: Sequence[Hashable], what: str) -> None:
    """A validator's check: ``values`` (names, seeds, labels) must not repeat."""
    if len(set(values)) != len(values):
        raise ValueError(f"{what} must be distinct, got {list(values)}")


def resolve_path(path: str | os.PathLike, *, must_exist: bool = True) -> Path:
    """A relative path from the current directory, else from the repository root."""
    from defsentflow.storage.paths import repo_root  # leaf: imports nothing from the project

    p = Path(path).expanduser()
    if p.is_absolute():
        candidates = [p]
    else:
        candidates = [Path.cwd() / p, repo_root() / p]
    for c in candidates:
        if c.exists():
            return c.resolve()
    if must_exist:
        raise FileNotFoundError(f"not found: {path} (looked in {', '.join(str(c.parent) for c in candidates)})")
    return candidates[0]
