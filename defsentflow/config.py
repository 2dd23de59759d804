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

import copy
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from defsentflow.compute import ComputeSection
from defsentflow.config_tools import ConfigSection, format_errors, read_yaml_mapping, resolve_path
from defsentflow.dictionary.config import NAME_PATTERN, DictionaryConfig
from defsentflow.evaluation.config import EvalSection
from defsentflow.registry.gate import PromoteSection
from defsentflow.scoring.config import HarvestConfig
from defsentflow.storage.identifiers import RUN_NAME_MAX
from defsentflow.training.pretrain_config import PretrainSection
from defsentflow.training.pst_config import DefSentSection, PstSection

__all__ = ["PipelineConfig", "EvalSection", "config_from_dict", "format_errors", "load_config",
           "load_pretrain_section", "load_section", "read_yaml_mapping", "resolve_path"]


class PipelineConfig(ConfigSection):
    """``configs/*.yaml``: ingest dictionary -> ingest corpus -> harvest -> surrogate -> PST -> eval -> report."""

    # at most 119 characters: a run id is the name, '-' and 8 hex digits, within the 128 of an identifier
    name: str = Field(pattern=NAME_PATTERN, max_length=RUN_NAME_MAX,
                      description="the run's name; the schedule compares inputs per name")
    home: str | None = Field(None, description="data root (default $DEFSENTFLOW_HOME or ./storage)")
    dictionary: DictionaryConfig
    harvest: HarvestConfig | None = Field(None, description="corpus, retrieval, scoring, pairs and the surrogate; None skips them")
    train_surrogate: bool = Field(True, description="train the surrogate on the harvested pairs (needs harvest)")
    pretrain: PretrainSection | None = Field(None, description="MLM-pretrain a raw encoder first (the positive control)")
    pst_from: Literal["base", "surrogate", "pretrain"] = Field(
        "base", description="PST starts from pst.base_model, the surrogate, or the pretrained raw encoder")
    pst: PstSection | None = Field(None, description="DefSent+ with Progressive Separate Training")
    defsent: DefSentSection | None = Field(None, description="one DefSent or DefSent+ run instead of PST")
    eval: EvalSection = EvalSection()
    report: bool = True
    promote: PromoteSection = Field(PromoteSection(), description="when a run's model replaces <name>@champion (the "
                                    "promotion gate); not part of the run's fingerprint")
    compute: ComputeSection = Field(ComputeSection(), description="where fanned-out work runs (Dask); not part "
                                    "of the run's fingerprint")

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
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: expected a mapping at the top level")
    data = copy.deepcopy(data)
    for section in ("pst", "defsent"):
        if isinstance(data.get(section), dict) and isinstance(data.get("dictionary"), dict):
            data[section].setdefault("dictionary", data["dictionary"].get("name"))
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{origin}: invalid config: {format_errors(exc, model=PipelineConfig)}") from exc


def load_pretrain_section(path: str | os.PathLike) -> PretrainSection:
    """The ``pretrain:`` section of a YAML config.

    The whole file is validated as a pipeline config when :func:`load_config` accepts it; a file
    it rejects (e.g. one whose pipeline sections are incomplete) is still used, with the
    ``pretrain:`` section validated on its own.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a YAML mapping, no ``pretrain:`` section, or an invalid one (the message
            names the file and the keys).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config not found: {p}")
    try:
        section = load_config(p).pretrain
    except ValueError:
        section = None
    if section is not None:
        return section
    raw = read_yaml_mapping(p, what="config")
    if raw.get("pretrain") is None:
        raise ValueError(f"{p}: no 'pretrain:' section (top-level keys: {sorted(raw)})")
    try:
        return PretrainSection.model_validate(raw["pretrain"])
    except ValidationError as exc:
        raise ValueError(f"{p}: invalid 'pretrain:' section: {format_errors(exc, 'pretrain', PretrainSection)}") from None


_TRAINING_SECTIONS: dict[str, type[BaseModel]] = {"pst": PstSection, "defsent": DefSentSection}


def load_section(path: str | os.PathLike, key: Literal["pst", "defsent"]) -> PstSection | DefSentSection:
    """Read a YAML config and validate its ``key`` section.

    ``pst``: the whole pipeline file is validated by :func:`load_config`, so a PST config is a
    pipeline config. ``defsent``: a training config whose ``defsent:`` section is validated on its
    own (other top-level keys, e.g. ``name`` and ``dictionary``, are tolerated).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is not a YAML mapping, lacks the section, or the section is invalid
            (the message names the file and the offending keys).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config not found: {p}")
    if key == "pst":
        return load_config(p).pst
    raw = read_yaml_mapping(p, what="config")
    if key not in raw or raw[key] is None:
        raise ValueError(f"{p}: no '{key}:' section (top-level keys: {sorted(raw)})")
    try:
        return _TRAINING_SECTIONS[key].model_validate(raw[key])
    except ValidationError as exc:
        raise ValueError(f"{p}: invalid '{key}:' section: {format_errors(exc, key, _TRAINING_SECTIONS[key])}") from None
