"""Identifiers that become parts of paths, and paths that must stay under the data root.

Run ids, dataset, corpus, model-prefix, sweep and point names all name directories or files
under the data root (``reports/<run_id>``, ``parquet/dictionaries/<name>``, ...). Each is
checked against one pattern where it enters (CLI argument, config field, catalog call), and
each path built from one is checked again by :func:`under_root`, so neither ``../x`` nor an
absolute path can move a write outside the data root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from defsentflow.storage.paths import root_path

__all__ = ["ALIAS_PATTERN", "IDENTIFIER_PATTERN", "RUN_NAME_MAX", "check_alias", "check_identifier", "under_root"]

# Starts with a letter or digit, then letters, digits, '.', '_', '-'; at most 128 characters.
# There is no '/' or '\\', so no part can be '..' or absolute. (Written without look-arounds so
# that pydantic's `Field(pattern=...)` accepts the same string.)
IDENTIFIER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
# A config name leaves room for the run id made of it: '<name>-<8 hex digits>' is an identifier too.
RUN_NAME_MAX = 128 - 9
# A model alias: a config's name, '@' and a label (demo@champion), as defsentflow.registry files it.
ALIAS_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}@[A-Za-z0-9][A-Za-z0-9._-]{0,39}$"
_ALIAS = re.compile(ALIAS_PATTERN)


def check_identifier(value: object, what: str = "name") -> str:
    """``value`` if it is a valid identifier, else a ValueError that says what was wrong.

    Example:
        >>> check_identifier("run-2024.1", "run id")
        'run-2024.1'
    """
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} is not allowed: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return value


def check_alias(value: object) -> str:
    """``value`` if it is an alias, ``CONFIG@LABEL`` (``demo@champion``), else a ValueError saying so."""
    if not isinstance(value, str) or not _ALIAS.fullmatch(value):
        raise ValueError(f"alias {str(value)[:80]!r} is not allowed: write CONFIG@LABEL (demo@champion): a config name, "
                         "'@' and a label of at most 40 letters, digits, '.', '_' or '-'")
    return value


def under_root(root: str | os.PathLike, *parts: str | os.PathLike) -> Path:
    """``root / parts``, refused (ValueError) if it resolves outside ``root``: the data root's one path
    rule, :func:`defsentflow.storage.paths.root_path` (the first part is a folder of the root).

    Example:
        >>> under_root("/data", "reports", "run-1").as_posix()
        '/data/reports/run-1'
    """
    first, *rest = (str(p) for p in parts)
    return root_path(root, first, *rest)
