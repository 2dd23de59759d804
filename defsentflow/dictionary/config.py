"""What to ingest: frozen configs inside the library, a pydantic model at the boundary."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from defsentflow.storage.identifiers import IDENTIFIER_PATTERN
from defsentflow.dictionary.records import SOURCE_KINDS, VARIANTS, SourceKind, Variant, check_choice
from defsentflow.dictionary.split import DEFAULT_RATIOS, SPLIT_BY, SplitBy
from defsentflow.dictionary.validate import MAX_CHARS

__all__ = ["SourceSpec", "DictionaryConfig", "SourceParams", "IngestDictionaryParams", "NAME_PATTERN"]

# Dataset names become directory names and SQL values: keep them plain.
NAME_PATTERN = IDENTIFIER_PATTERN  # one pattern for every name that becomes a path


@dataclass(frozen=True)
class SourceSpec:
    """One source: a reader kind, its paths (files; a directory for ``oewn``) and a name.

    Example:
        >>> SourceSpec("tsv", ("extra.tsv",), name="extra")
    """

    kind: SourceKind
    paths: tuple[str, ...]
    name: str | None = None

    def __post_init__(self) -> None:
        check_choice(self.kind, SOURCE_KINDS, "source kind")
        if not self.paths:
            raise ValueError(f"source {self.kind!r} has no paths")


@dataclass(frozen=True)
class DictionaryConfig:
    """How a dictionary dataset is built. Everything but ``name`` and ``workers`` is part of the
    artifact key.

    Example:
        >>> DictionaryConfig("oewn", (SourceSpec("oewn", ("../shared/data/oewn/yaml",)),))
    """

    name: str
    sources: tuple[SourceSpec, ...]
    variant: Variant = "a"
    tokenizer: str | None = None
    seed: int = 0
    case_fold: bool = True
    max_chars: int = MAX_CHARS
    ratios: tuple[float, float, float] = DEFAULT_RATIOS
    workers: int = 2
    split_by: SplitBy = "entry"

    def __post_init__(self) -> None:
        if not re.match(NAME_PATTERN, self.name):
            raise ValueError(f"dataset name {self.name!r} must match {NAME_PATTERN} (letters, digits, . _ -)")
        check_choice(self.variant, VARIANTS, "variant")
        check_choice(self.split_by, SPLIT_BY, "split_by")
        if not self.sources:
            raise ValueError("at least one source is needed")
        if self.variant == "b" and len(self.sources) != 1:
            raise ValueError(f"variant b is a single source; got {len(self.sources)} sources")
        if self.variant == "c" and not self.tokenizer:
            raise ValueError("variant c needs a tokenizer (--tokenizer NAME_OR_PATH)")
        if self.variant != "c" and self.tokenizer:
            raise ValueError(f"--tokenizer is only used by variant c (variant is {self.variant!r})")
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {self.max_chars}")
        if len(self.ratios) != 3 or min(self.ratios) < 0 or sum(self.ratios) <= 0:
            raise ValueError(f"ratios must be three non-negative numbers, got {self.ratios}")
        names = self.source_names()
        if len(set(names)) != len(names):
            raise ValueError(f"source names must differ, got {names}")

    def source_names(self) -> list[str]:
        """Each source's name: as given, else its kind, numbered from the second of a kind on."""
        seen: dict[str, int] = {}
        out = []
        for s in self.sources:
            seen[s.kind] = seen.get(s.kind, 0) + 1
            out.append(s.name or (s.kind if seen[s.kind] == 1 else f"{s.kind}-{seen[s.kind]}"))
        return out

    def key_fields(self) -> dict[str, Any]:
        """The config part of the artifact key (paths excluded: inputs count by content)."""
        return {
            "sources": [{"kind": s.kind, "name": n} for s, n in zip(self.sources, self.source_names())],
            "variant": self.variant, "seed": self.seed, "case_fold": self.case_fold,
            "max_chars": self.max_chars, "ratios": list(self.ratios),
            # only when not the default, so datasets split by entry keep their artifact keys
            **({"split_by": self.split_by} if self.split_by != "entry" else {}),
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class SourceParams(BaseModel):
    """A source at the boundary (CLI, flow parameters, YAML)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    kind: SourceKind
    paths: list[str] = Field(min_length=1)
    name: str | None = Field(default=None, pattern=NAME_PATTERN)


class IngestDictionaryParams(BaseModel):
    """Parameters of ``defsentflow ingest dictionary`` and the ``ingest-dictionary`` flow.

    Example:
        >>> IngestDictionaryParams(name="oewn", sources=[{"kind": "oewn", "paths": ["../shared/data/oewn/yaml"]}])
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(pattern=NAME_PATTERN)
    sources: list[SourceParams] = Field(min_length=1)
    variant: Variant = "a"
    tokenizer: str | None = None
    seed: int = 0
    case_fold: bool = True
    max_chars: int = Field(default=MAX_CHARS, ge=1)
    workers: int = Field(default=2, ge=1)
    split_by: SplitBy = Field(
        "entry", description="entry: each entry's definitions in one split; gloss: each definition text in one "
                             "split under every entry (WordNet: a split by synset)")

    @model_validator(mode="after")
    def _consistent(self) -> IngestDictionaryParams:
        self.to_config()  # one set of rules: the frozen config's
        return self

    def to_config(self) -> DictionaryConfig:
        return DictionaryConfig(
            name=self.name,
            sources=tuple(SourceSpec(s.kind, tuple(s.paths), s.name) for s in self.sources),
            variant=self.variant, tokenizer=self.tokenizer, seed=self.seed, case_fold=self.case_fold,
            max_chars=self.max_chars, workers=self.workers, split_by=self.split_by,
        )
