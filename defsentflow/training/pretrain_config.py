"""The config of the masked-LM pretraining stage (the ``pretrain:`` section of a pipeline config).

One frozen model, read directly by the library (:mod:`defsentflow.training.pretrain`): the
corpora and the dictionary name say where the text comes from, the architecture and the
optimisation settings how the encoder is trained (:meth:`PretrainSection.identity` is what its
artifact key hashes).

Example:
    >>> section = PretrainSection(corpora=[{"name": "bbc", "paths": ["../shared/data/corpus/bbc"]}],
    ...                           dictionary="oewn", max_steps=300)
    >>> section.architecture.hidden
    256
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from defsentflow.config_tools import LIMITS, Autocast, ConfigSection, DictionarySplit, Seed, require_distinct
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN

__all__ = ["ArchitectureSection", "CorpusSource", "PretrainSection"]

# Settings that do not change the numbers a run computes: not part of the key or the fingerprint.
_RESUME_NEUTRAL = ("device", "checkpoint_every")


class CorpusSource(ConfigSection):
    """A corpus to read sentences from: ingested from ``paths`` if given (a cache hit when unchanged),
    else the newest ingest of ``name`` already in the catalog."""

    name: str = Field(pattern=IDENTIFIER_PATTERN)
    paths: list[str] = Field(default_factory=list, description="files or directories (relative: cwd, then the repo root)")


class ArchitectureSection(ConfigSection):
    """A BERT encoder built from scratch (random weights)."""

    hidden: int = Field(256, ge=8, le=LIMITS["width"])
    layers: int = Field(4, ge=1, le=LIMITS["layers"])
    heads: int = Field(4, ge=1, le=LIMITS["layers"])
    intermediate: int = Field(1024, ge=8, le=LIMITS["width"])
    max_length: int = Field(64, ge=8, le=512, description="tokens per training sentence (longer ones are truncated)")
    max_position_embeddings: int = Field(512, ge=8, le=LIMITS["tokens"],
                                         description="positions the model accepts (evaluation may use > max_length)")
    dropout: float = Field(0.1, ge=0.0, lt=1.0)

    @model_validator(mode="after")
    def _consistent(self) -> ArchitectureSection:
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.max_position_embeddings < self.max_length:
            raise ValueError(f"max_position_embeddings ({self.max_position_embeddings}) < max_length ({self.max_length})")
        return self


class PretrainSection(ConfigSection):
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
    batch_size: int = Field(128, ge=1, le=LIMITS["batch"])
    lr: float = Field(5e-4, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    warmup_steps: int = Field(200, ge=0, le=LIMITS["opt_steps"])
    epochs: int = Field(1, ge=1, le=LIMITS["epochs"])
    max_steps: int | None = Field(None, ge=1, le=LIMITS["opt_steps"],
                                  description="cap on optimizer steps (the schedule decays to it)")
    mask_prob: float = Field(0.15, gt=0, lt=1)
    grad_clip: float | None = Field(1.0, gt=0)
    seed: Seed = 0
    device: str = "auto"
    autocast: Autocast = "none"
    checkpoint_every: int = Field(100, ge=1, le=LIMITS["opt_steps"])
    bucket_batches: int = Field(50, ge=1, le=LIMITS["count"],
                                description="batches per length-sorted chunk (batching.length_bucketed_batches)")

    @field_validator("corpora")
    @classmethod
    def _unique(cls, v: list[CorpusSource]) -> list[CorpusSource]:
        require_distinct([c.name for c in v], "corpus names")
        return v

    def settings(self) -> dict[str, Any]:
        """Architecture and optimisation, flat (what the model's ``defsentflow.json`` records)."""
        names = ("batch_size", "lr", "weight_decay", "warmup_steps", "epochs", "max_steps", "mask_prob", "grad_clip",
                 "seed", "device", "autocast", "checkpoint_every", "bucket_batches")
        return {**self.architecture.model_dump(), **{k: getattr(self, k) for k in names}}

    def identity(self) -> dict[str, Any]:
        """The settings that change the trained weights (hashed into the artifact key and the checkpoint's
        fingerprint)."""
        return {k: v for k, v in self.settings().items() if k not in _RESUME_NEUTRAL}
