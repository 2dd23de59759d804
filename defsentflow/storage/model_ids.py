"""The content-hashed model id: an untrained base model is filed as ``base-<first 12 hex digits of
its folder's content hash>``, so the id names the files, not the path they were found at. Every place
that trusts such an id against a folder (the model lookup, ``catalog rebuild``) asks
:func:`content_id_problem`.

Example:
    >>> content_model_id("0123456789abcdef0123")
    'base-0123456789ab'
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from defsentflow.storage.hashing import model_folder_hash

__all__ = ["content_id_problem", "content_model_id"]

_CONTENT_ID = re.compile(r"^base-([0-9a-f]{12})$")


def content_model_id(content_hash: str) -> str:
    """The id of a base model whose folder has content hash ``content_hash``."""
    return f"base-{content_hash[:12]}"


def content_id_problem(model_id: str, path: str | os.PathLike | None) -> str | None:
    """Why ``model_id`` does not name the folder at ``path`` (None: it does, the id is not a content id,
    or ``path`` is no folder here to check)."""
    m = _CONTENT_ID.fullmatch(model_id or "")
    if m is None or not path or not Path(path).is_dir():
        return None
    actual = model_folder_hash(path)
    if actual.startswith(m.group(1)):
        return None
    return (f"model {model_id} names the files with content hash {m.group(1)}..., but {path} holds "
            f"{actual[:12]}... (another model, or the same folder changed)")
