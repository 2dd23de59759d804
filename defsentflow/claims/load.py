"""Read a claims file: validate it, apply ``set`` to its base config, and plan (so validate) every arm."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from defsentflow.claims.arms import plan_arms
from defsentflow.claims.config import ClaimsConfig, ClaimsFile
from defsentflow.config import config_from_dict
from defsentflow.config_tools import set_dotted
from defsentflow.sweep import read_with_base

__all__ = ["load_claims"]


def load_claims(path: str | os.PathLike | None = None, *, data: dict[str, Any] | None = None) -> ClaimsConfig:
    """Read and validate a claims file (or a mapping given as ``data``), arms included.

    Raises:
        FileNotFoundError: the claims file or its base config does not exist.
        ValueError: invalid YAML, an unknown key or claim, a base that is not a PST pipeline config,
            or an arm that makes an invalid config (the message names the file and the key).
    """
    origin = str(path) if path is not None else "<claims file>"
    spec, base, base_path = read_with_base(path, data, ClaimsFile, what="claims file", invalid="invalid claims file")
    for key, value in spec.set.items():
        try:
            base = set_dotted(base, key, value)
        except ValueError as exc:
            raise ValueError(f"{origin}: set.{key}: {exc}") from None
    cfg = config_from_dict({**base, "name": spec.name}, origin=f"{origin}: base config")
    if cfg.pst is None:
        raise ValueError(f"{origin}: base config: the claims are measured on PST runs; give a base with a pst: section")
    claims = ClaimsConfig(spec=spec, base=base, path=str(Path(path).resolve()) if path is not None else None,
                          base_path=base_path)
    plan_arms(claims, origin=origin)  # every arm validated now, so a bad value fails before any training
    return claims
