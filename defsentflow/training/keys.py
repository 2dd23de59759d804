"""Content keys of the training artifacts: inputs + settings + code version -> key.

Every training artifact (entry matrix, model, selection score, PST step, PST result) is filed
under ``artifact_key(kind, *inputs)``; the same inputs give the same key on every machine, and a
changed input, setting or code version gives another.
"""

from __future__ import annotations

from typing import Any

from defsentflow.encoders import model_content_hash, resolve_model_path
from defsentflow.storage import code_version, combine_hashes, hash_config
from defsentflow.training.pst_config import DefSentSection, PstSection

__all__ = ["artifact_key", "base_model_of", "config_identity"]


def artifact_key(*parts: Any) -> str:
    """The key of an artifact made from ``parts`` (a kind name first) by this code version."""
    return combine_hashes([*(str(p) for p in parts), code_version()])


def config_identity(cfg: Any) -> str:
    """Hash of the training settings that change the trained weights (not where or how often it
    checkpoints)."""
    return hash_config(cfg.model_dump(exclude={"device", "checkpoint_every"}))


def base_model_of(section: PstSection | DefSentSection) -> tuple[str, str]:
    """The section's base model: its resolved path and content hash."""
    path = resolve_model_path(section.base_model)
    return path, model_content_hash(path)
