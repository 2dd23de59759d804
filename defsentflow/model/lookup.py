"""One model lookup for every command that takes a model.

A name is, in this order: a catalog id or any alias of one (what ``defsentflow leaderboard``
prints), a bundled name (``minilm``), a model folder, or a Hugging Face id. A hub id is taken only
when it can be loaded without surprise: it is in the local Hugging Face cache, or the hub may be
asked (``HF_HUB_OFFLINE=0``; the project's default is offline). Anything else is one line,
``unknown model 'x': ...; newest ids: ...``, before any model is loaded and before anything is
recorded.

Example:
    >>> find_model("pst-demo-1a2b3c4d").path
    '/home/me/storage/models/pst/...'
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from defsentflow.encoders.loading import BUNDLED_ALIASES, portable_model_name, resolve_model_path
from defsentflow.model.ids import base_model_id
from defsentflow.storage.catalog import Catalog, CatalogError
from defsentflow.storage.identifiers import ALIAS_PATTERN
from defsentflow.storage.model_ids import content_id_problem, recorded_content_hash

__all__ = ["ModelRef", "UnknownModelError", "find_model", "hub_offline"]

# A Hugging Face repository id: ``name`` or ``org/name`` (letters, digits, '-', '_', '.').
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")


class UnknownModelError(ValueError):
    """A model name that is nothing this machine has (one line, with the newest catalog ids)."""


@dataclass(frozen=True)
class ModelRef:
    """What a model name resolved to: the id its scores are filed under, and what loads it."""

    name: str        # as given
    model_id: str    # the catalog id (a registered model), else the id rule's (base:<name> for a bundled or hub model)
    path: str        # a local folder, or a Hugging Face id
    source: Literal["catalog", "bundled", "folder", "hub"]


def hub_offline() -> bool:
    """Whether the Hugging Face hub may not be asked: ``HF_HUB_OFFLINE`` (default on here, as the
    flows set it)."""
    return os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() in ("1", "true", "yes", "on")


def _catalog(root: str | os.PathLike | None) -> Catalog | None:
    cat = Catalog(root, reader=True)  # a reader: never creates or changes the catalog
    return cat if cat.path.is_file() else None


def _query(cat: Catalog | None, sql: str, params: list) -> list[dict]:
    if cat is None:
        return []
    try:
        return cat.query(sql, params)
    except (CatalogError, OSError):  # an unreadable or older catalog: the other ways still work
        return []


def _registered(cat: Catalog | None, name: str) -> tuple[str, str] | None:
    """``(model_id, folder)`` of a catalog id, alias or name whose folder exists (a model made
    elsewhere is filed by the name a user passes, ``minilm``: its folder in this environment)."""
    rows = _query(cat, "SELECT model_id, path FROM models WHERE model_id = ? AND path IS NOT NULL", [name])
    rows += _query(cat, "SELECT b.model_id, b.path FROM model_ids AS a JOIN model_ids AS b USING (model_key) "
                        "WHERE a.model_id = ? AND b.path IS NOT NULL AND NOT b.is_name "
                        "ORDER BY b.model_id = a.display_id DESC", [name])
    for r in rows:
        try:
            folder = resolve_model_path(r["path"])
        except FileNotFoundError:  # the bundled extra is not installed here
            continue
        # a stored path is this root's folder, a name or an absolute folder: never read against the current directory
        if not Path(folder).is_absolute() or not Path(folder).is_dir():
            continue
        if not Path(cat.rel(folder)).is_absolute():  # a folder of the root: its artifact record vouches for it
            return r["model_id"], folder
        # a model made elsewhere: its files must be the ones it was filed with (a trained model's meta also
        # holds base_model_hash, the hash of the model it started from: never read for a folder of the root)
        meta = _query(cat, "SELECT meta FROM models WHERE model_id = ?", [r["model_id"]])
        if problem := content_id_problem(r["model_id"], folder, recorded_content_hash(meta[0]["meta"] if meta else None)):
            raise ValueError(problem)  # not an unknown name: no fallback may load another folder under this id
        return r["model_id"], folder
    return None


def _id_of_folder(cat: Catalog | None, folder: str) -> str | None:
    """The catalog id of a registered folder (a properly registered one before an id scores were filed under)."""
    absolute = str(Path(folder).resolve())
    paths = [absolute, portable_model_name(absolute)] + ([cat.rel(absolute)] if cat is not None else [])
    rows = _query(cat, "SELECT model_id FROM models WHERE list_contains(?, path) ORDER BY method IS NULL, created_at",
                  [paths])
    return rows[0]["model_id"] if rows else None


def _in_hub_cache(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache  # lazy: huggingface_hub loads only where it is used

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # a malformed id is no cached model
        return False


def find_model(name: str | os.PathLike, *, root: str | os.PathLike | None = None, catalog: bool = True) -> ModelRef:
    """Resolve ``name`` (catalog id or alias, bundled name, folder, Hugging Face id); reads nothing
    but the catalog (read-only; not at all without ``catalog``) and the local Hugging Face cache.

    Raises:
        UnknownModelError: none of these (the message lists the newest catalog ids).
    """
    text = str(name).strip()
    cat = _catalog(root) if catalog else None
    with contextlib.ExitStack() as held:
        if cat is not None:
            try:  # one open of the catalog file for the lookups below (Catalog.session)
                held.enter_context(cat.session(read_only=True))
            except (CatalogError, OSError):
                pass  # an unreadable catalog: each lookup says so as before (the other ways still work)
        return _find(text, cat)


def _find(text: str, cat: Catalog | None) -> ModelRef:
    if found := _registered(cat, text):
        return ModelRef(text, found[0], found[1], "catalog")
    if text in BUNDLED_ALIASES or text.lower() == "sentence-transformers/all-minilm-l6-v2":
        path = resolve_model_path(text)  # FileNotFoundError when the extra is not installed
        return ModelRef(text, _id_of_folder(cat, path) or base_model_id(text), path, "bundled")
    folder = Path(text).expanduser()
    looks_local = folder.is_absolute() or text.startswith((".", "~")) or folder.exists()
    if folder.is_dir():
        return ModelRef(text, _id_of_folder(cat, str(folder)) or text, str(folder), "folder")
    if not looks_local and _HUB_ID.match(text) and (_in_hub_cache(text) or not hub_offline()):
        return ModelRef(text, base_model_id(text), text, "hub")
    if re.fullmatch(ALIAS_PATTERN, text):  # written as an alias (CONFIG@LABEL): say which aliases there are
        known = [r["alias"] for r in _query(cat, "SELECT alias FROM alias_holders ORDER BY alias", [])]
        raise UnknownModelError(f"no alias {text!r}; aliases: {', '.join(known) or 'none'}")
    newest = [r["model_id"] for r in _query(cat, "SELECT model_id FROM models WHERE path IS NOT NULL "
                                                 "ORDER BY created_at DESC LIMIT 5", [])]
    what = ("model not found (no such folder)" if looks_local else
            f"not a catalog id, a bundled name ({', '.join(BUNDLED_ALIASES)}), a model folder or a Hugging Face id "
            + ("in the local cache (offline; HF_HUB_OFFLINE=0 lets the hub be asked)" if hub_offline() else ""))
    raise UnknownModelError(f"unknown model {text!r}: {what.rstrip()}" + (f"; newest ids: {', '.join(newest)}" if newest else ""))
