"""The checks a run makes on the paths of its config before any stage starts.

A config loads offline and without its inputs (the paper configs name data that lives
elsewhere), so paths are not checked when it is read; ``defsentflow run`` and ``sweep run`` call
:func:`preflight` when a run starts. Each path must exist and be of the kind its key expects: a
directory of YAML files for an ``oewn`` source, a ``.jsonl``/``.tsv``/text file for the other
sources, a model directory (with ``config.json``) or a Hugging Face model id for a
``base_model``. The first failure is a one-line ``ValueError`` naming the config and the key.

Example:
    >>> preflight(load_config("configs/demo.yaml"), "configs/demo.yaml")
"""

from __future__ import annotations

import re
from typing import Any

from defsentflow.config_tools import resolve_path
from defsentflow.encoders.loading import BUNDLED_ALIASES, pick_device
from defsentflow.model.lookup import UnknownModelError, find_model

__all__ = ["MODEL_ID_PATTERN", "check_exists", "check_model_names", "check_model_ref", "check_source_path", "preflight"]

# A Hugging Face id: ``name`` or ``owner/name`` (letters, digits, - _ .), never a path.
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?$"
_SUFFIXES = {"jsonl": (".jsonl", ".json", ".ndjson"), "tsv": (".tsv", ".txt"), "oxford": (".txt", ".tsv")}


def _looks_like_path(value: str) -> bool:
    return value.startswith((".", "/", "~")) or "\\" in value or ".." in value or value.count("/") > 1


def check_model_ref(value: str, key: str) -> None:
    """``value`` names a model: a bundled alias, a model directory, or a Hugging Face id that can be
    loaded (in the local cache while offline: :func:`~defsentflow.model.lookup.find_model`)."""
    if value in BUNDLED_ALIASES:
        return
    path = resolve_path(value, must_exist=False)
    if path.exists() or _looks_like_path(value):
        if not path.is_dir():
            raise ValueError(f"{key}: {value!r} is not a model directory (not found or not a folder)")
        if not (path / "config.json").is_file():
            raise ValueError(f"{key}: {value!r} is a folder but not a model directory (no config.json)")
        return
    if not re.match(MODEL_ID_PATTERN, value):
        raise ValueError(f"{key}: {value[:80]!r} is neither a model directory nor a Hugging Face model id "
                         "(owner/name: letters, digits, - _ .)")
    try:
        find_model(value, catalog=False)  # training loads a bundled name, a folder or a hub id, not a catalog id
    except UnknownModelError as exc:
        raise ValueError(f"{key}: {exc}") from None


def check_source_path(kind: str, value: str, key: str) -> None:
    """A dictionary source path exists and is of its kind's type."""
    path = resolve_path(value, must_exist=False)
    if not path.exists():
        raise ValueError(f"{key}: not found: {value}")
    if kind == "oewn":
        if not path.is_dir():
            raise ValueError(f"{key}: an oewn source is a directory of YAML files, but {value} is not a directory")
        if not any(path.glob("*.yaml")):
            raise ValueError(f"{key}: an oewn source is a directory of YAML files, but {value} holds no *.yaml")
        return
    if not path.is_file():
        raise ValueError(f"{key}: a {kind} source is a file, but {value} is not a regular file")
    if path.suffix.lower() not in _SUFFIXES.get(kind, (path.suffix.lower(),)):
        raise ValueError(f"{key}: a {kind} source is a {'/'.join(_SUFFIXES[kind])} file, got {value}")


def check_exists(value: str, key: str) -> None:
    """A corpus path: an existing file or directory."""
    path = resolve_path(value, must_exist=False)
    if not (path.is_file() or path.is_dir()):
        raise ValueError(f"{key}: not found (or not a file or directory): {value}")


def check_model_names(raw: dict[str, Any], origin: str) -> None:
    """The model names of a config as written, before it is validated (validation loads torch, seconds
    on a busy machine): a typo in ``base_model`` fails at once, in one line."""
    try:
        if raw.get("pst_from", "base") == "base":
            for section in ("pst", "defsent"):
                value = (raw.get(section) or {}).get("base_model") if isinstance(raw.get(section), dict) else None
                if isinstance(value, str):
                    check_model_ref(value, f"{section}.base_model")
        pretrain = raw.get("pretrain")
        if isinstance(pretrain, dict) and isinstance(pretrain.get("tokenizer"), str):
            check_model_ref(pretrain["tokenizer"], "pretrain.tokenizer")
        check_devices(raw)
    except ValueError as exc:
        raise ValueError(f"{origin}: {exc}") from None


def check_devices(config: Any, where: str = "") -> None:
    """Every ``device``/``*_device`` value of a config that is not ``auto`` names a device this machine
    has: checked at the start, whether the run's stages are cached or not (a bad device was found only
    at the first candidate it trained)."""
    if isinstance(config, dict):
        for key, value in config.items():
            name = f"{where}.{key}" if where else str(key)
            if (key == "device" or str(key).endswith("_device")) and isinstance(value, str) \
                    and value not in ("auto", "cpu"):
                try:
                    pick_device(value)
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
            else:
                check_devices(value, name)
    elif isinstance(config, list):
        for i, value in enumerate(config):
            check_devices(value, f"{where}[{i}]")


def preflight(cfg: Any, origin: str) -> None:
    """Check every path of pipeline config ``cfg`` (see the module doc); errors start with ``origin``."""
    try:
        for i, src in enumerate(cfg.dictionary.sources if cfg.dictionary else ()):
            for j, value in enumerate(src.paths):
                check_source_path(src.kind, value, f"dictionary.sources[{i}].paths[{j}]")
        harvest, pretrain = getattr(cfg, "harvest", None), getattr(cfg, "pretrain", None)
        for j, value in enumerate(harvest.corpus.paths if harvest else ()):
            check_exists(value, f"harvest.corpus.paths[{j}]")
        for i, corpus in enumerate(pretrain.corpora if pretrain else ()):
            for j, value in enumerate(corpus.paths):
                check_exists(value, f"pretrain.corpora[{i}].paths[{j}]")
        if pretrain:
            check_model_ref(pretrain.tokenizer, "pretrain.tokenizer")
        for section in ("pst", "defsent"):
            sec = getattr(cfg, section, None)
            # pst_from surrogate/pretrain: training starts from an encoder this run makes instead
            if sec is not None and getattr(cfg, "pst_from", "base") == "base":
                check_model_ref(sec.base_model, f"{section}.base_model")
        check_devices(cfg.model_dump(mode="json"))
    except ValueError as exc:
        raise ValueError(f"{origin}: {exc}") from None

