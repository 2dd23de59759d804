"""Boundary config of the masked-LM pretraining stage (the ``pretrain:`` section of a pipeline config).

Inside the library the section becomes a frozen :class:`~defsentflow.training.pretrain.PretrainConfig`
(:meth:`PretrainSection.to_config`); the corpora and the dictionary name say where the text comes from.

Example:
    >>> section = PretrainSection(corpora=[{"name": "bbc", "paths": ["../shared/data/corpus/bbc"]}],
    ...                           dictionary="oewn", max_steps=300)
    >>> section.architecture.hidden
    256
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from defsentflow.config_tools import ConfigSection, require_distinct
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN

__all__ = ["ArchitectureSection", "CorpusSource", "PretrainSection"]

AutocastName = Literal["none", "bf16", "fp16"]
DictionarySplit = Literal["train", "dev", "test"]


class _Section(ConfigSection):
    """A section of this config: frozen, unknown keys refused, strict types (config_tools.ConfigSection)."""


class CorpusSource(_Section):
    """A corpus to read sentences from: ingested from ``paths`` if given (a cache hit when unchanged),
    else the newest ingest of ``name`` already in the catalog."""

    name: str = Field(pattern=IDENTIFIER_PATTERN)
    paths: list[str] = Field(default_factory=list, description="files or directories (relative: cwd, then the repo root)")


class ArchitectureSection(_Section):
    """A BERT encoder built from scratch (random weights)."""

    hidden: int = Field(256, ge=8)
    layers: int = Field(4, ge=1)
    heads: int = Field(4, ge=1)
    intermediate: int = Field(1024, ge=8)
    max_length: int = Field(64, ge=8, le=512, description="tokens per training sentence (longer ones are truncated)")
    max_position_embeddings: int = Field(512, ge=8, description="positions the model accepts (evaluation may use > max_length)")
    dropout: float = Field(0.1, ge=0.0, lt=1.0)

    @model_validator(mode="after")
    def _consistent(self) -> ArchitectureSection:
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.max_position_embeddings < self.max_length:
            raise ValueError(f"max_position_embeddings ({self.max_position_embeddings}) < max_length ({self.max_length})")
        return self


class PretrainSection(_Section):
    """Masked-LM pretraining of a raw encoder (the positive control for DefSent / DefSent+).

    Text: every sentence of ``corpora`` plus, when ``dictionary`` is set, that dictionary's usage
    examples (never its definitions, so the glosses DefSent trains on stay unseen).
    """

    name: str = Field("raw", pattern=IDENTIFIER_PATTERN, description="model id prefix")
    corpora: list[CorpusSource] = Field(min_length=1)
    dictionary: str | None = Field(None, description="dictionary dataset whose usage examples are added; None: none")
    dictionary_splits: list[DictionarySplit] = Field(default_factory=lambda: ["train", "dev", "test"], min_length=1)
    architecture: ArchitectureSection = ArchitectureSection()
    tokenizer: str = Field("minilm", description="tokenizer directory or id; 'minilm' = the bundled MiniLM tokenizer")
    batch_size: int = Field(128, ge=1)
    lr: float = Field(5e-4, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    warmup_steps: int = Field(200, ge=0)
    epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1, description="cap on optimizer steps (the schedule decays to it)")
    mask_prob: float = Field(0.15, gt=0, lt=1)
    grad_clip: float | None = Field(1.0, gt=0)
    seed: int = 0
    device: str = "auto"
    autocast: AutocastName = "none"
    checkpoint_every: int = Field(100, ge=1)

    @field_validator("corpora")
    @classmethod
    def _unique(cls, v: list[CorpusSource]) -> list[CorpusSource]:
        require_distinct([c.name for c in v], "corpus names")
        return v

    def to_config(self) -> Any:
        """The library's frozen :class:`~defsentflow.training.pretrain.PretrainConfig`."""
        from defsentflow.training.pretrain import PretrainConfig

        a = self.architecture
        return PretrainConfig(
            hidden=a.hidden, layers=a.layers, heads=a.heads, intermediate=a.intermediate, max_length=a.max_length,
            max_position_embeddings=a.max_position_embeddings, dropout=a.dropout, batch_size=self.batch_size,
            lr=self.lr, weight_decay=self.weight_decay, warmup_steps=self.warmup_steps, epochs=self.epochs,
            max_steps=self.max_steps, mask_prob=self.mask_prob, grad_clip=self.grad_clip, seed=self.seed,
            device=self.device, autocast=self.autocast, checkpoint_every=self.checkpoint_every)
