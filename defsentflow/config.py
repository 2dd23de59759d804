"""The pipeline config: one YAML file describes a whole run.

Each stage's section is the pydantic model its package defines (``extra="forbid"``), so a typo
anywhere is an error that names the file and the key. Relative paths are resolved from the
current directory, then from the repository root.

Example:
    >>> cfg = load_config("configs/demo.yaml")
    >>> cfg.pst.steps
    2
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from defsentflow.config_tools import ConfigSection, format_errors, read_yaml_mapping
from defsentflow.dictionary.config import NAME_PATTERN, IngestDictionaryParams
from defsentflow.scoring.config import HarvestConfig
from defsentflow.training.pretrain_config import PretrainSection
from defsentflow.training.pst_config import DefSentSection, PstSection

__all__ = ["PipelineConfig", "EvalSection", "config_from_dict", "format_errors", "load_config", "read_yaml_mapping",
           "resolve_path"]


class _Section(ConfigSection):
    """A section of this config: frozen, unknown keys refused, strict types (config_tools.ConfigSection)."""


class EvalSection(_Section):
    """Final evaluation of the selected encoder and the baselines."""

    tasks: list[str] = Field(default_factory=lambda: ["sts12", "sts13", "sts14", "sts15", "sts16", "stsb-dev", "sickr", "revdict"])
    data_dir: str | None = Field("../shared/data", description="STS/SICK data; tasks whose files are missing are skipped and listed")
    pooling: Literal["cls", "mean", "max", "prompt"] = "mean"
    baselines: list[Literal["untrained", "sbert_wk", "surrogate"]] = Field(default_factory=lambda: ["untrained", "sbert_wk"])
    revdict_max_queries: int = Field(2000, ge=1)
    revdict_candidates: Literal["all", "split"] = Field(
        "all", description="reverse-dictionary candidates: every entry of the dictionary, or only the test split's")
    revdict_modes: list[Literal["head", "cosine", "hybrid"]] = Field(
        default_factory=lambda: ["head", "cosine"], min_length=1,
        description="reverse-dictionary modes; hybrid adds the headword's own vector to each entry")
    best_trained: bool = Field(
        False, description="also evaluate the best trained PST candidate when the untrained encoder was selected")
    cache: bool = Field(False, description="keep definition vectors in the data root's embedding cache")
    autocast: Literal["none", "bf16"] = "none"


class PipelineConfig(_Section):
    """``configs/*.yaml``: ingest dictionary -> ingest corpus -> harvest -> surrogate -> PST -> eval -> report."""

    name: str = Field(pattern=NAME_PATTERN, description="the run's name; the schedule compares inputs per name")
    home: str | None = Field(None, description="data root (default $DEFSENTFLOW_HOME or ./storage)")
    dictionary: IngestDictionaryParams
    harvest: HarvestConfig | None = Field(None, description="corpus, retrieval, scoring, pairs and the surrogate; None skips them")
    train_surrogate: bool = Field(True, description="train the surrogate on the harvested pairs (needs harvest)")
    pretrain: PretrainSection | None = Field(None, description="MLM-pretrain a raw encoder first (the positive control)")
    pst_from: Literal["base", "surrogate", "pretrain"] = Field(
        "base", description="PST starts from pst.base_model, the surrogate, or the pretrained raw encoder")
    pst: PstSection | None = Field(None, description="DefSent+ with Progressive Separate Training")
    defsent: DefSentSection | None = Field(None, description="one DefSent or DefSent+ run instead of PST")
    eval: EvalSection = EvalSection()
    report: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> PipelineConfig:
        if (self.pst is None) == (self.defsent is None):
            raise ValueError("give exactly one training section: pst (DefSent+ with PST) or defsent")
        train = self.pst or self.defsent
        if train.dictionary != self.dictionary.name:
            raise ValueError(f"the training section's dictionary ({train.dictionary!r}) must be the ingested "
                             f"dictionary.name ({self.dictionary.name!r})")
        if self.pst_from == "surrogate" and not (self.harvest and self.train_surrogate):
            raise ValueError("pst_from: surrogate needs a harvest section and train_surrogate: true")
        if self.pst_from == "pretrain" and self.pretrain is None:
            raise ValueError("pst_from: pretrain needs a pretrain section")
        return self


def resolve_path(path: str | os.PathLike, *, must_exist: bool = True) -> Path:
    """A relative path from the current directory, else from the repository root."""
    from defsentflow.storage.paths import repo_root

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


def load_config(path: str | os.PathLike) -> PipelineConfig:
    """Read and validate a pipeline YAML; errors name the file and the offending keys.

    The training section's ``dictionary`` key defaults to ``dictionary.name``.
    """
    p = Path(path)
    return config_from_dict(read_yaml_mapping(p, what="config"), origin=str(p))


def config_from_dict(data: Any, *, origin: str = "<config>") -> PipelineConfig:
    """Validate a pipeline config given as a mapping (what :func:`load_config` reads from YAML).

    Errors name ``origin`` and the offending keys; the training section's ``dictionary`` key
    defaults to ``dictionary.name``.
    """
    import copy

    if not isinstance(data, dict):
        raise ValueError(f"{origin}: expected a mapping at the top level")
    data = copy.deepcopy(data)
    for section in ("pst", "defsent"):
        if isinstance(data.get(section), dict) and isinstance(data.get("dictionary"), dict):
            data[section].setdefault("dictionary", data["dictionary"].get("name"))
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{origin}: invalid config: {format_errors(exc)}") from exc
