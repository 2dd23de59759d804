"""What to ingest: one frozen pydantic model per dictionary dataset, used by the CLI, the flow, the
pipeline config's ``dictionary:`` section and the library alike.

Example:
    >>> cfg = DictionaryConfig(name="oewn", sources=[{"kind": "oewn", "paths": ["../shared/data/oewn/yaml"]}])
    >>> cfg.source_names()
    ['oewn']
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from defsentflow.config_tools import LIMITS, ConfigSection, Seed, require_distinct
from defsentflow.dictionary.records import SourceKind, Variant
from defsentflow.dictionary.split import DEFAULT_RATIOS, SplitBy
from defsentflow.dictionary.validate import MAX_CHARS
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN

__all__ = ["SourceSpec", "DictionaryConfig", "NAME_PATTERN"]

# Dataset names become directory names and SQL values: keep them plain.
NAME_PATTERN = IDENTIFIER_PATTERN  # one pattern for every name that becomes a path


def _as_tuple(v: Any) -> Any:
    """YAML and JSON give lists; the frozen model keeps tuples (hashable, immutable)."""
    return tuple(v) if isinstance(v, list) else v


class SourceSpec(ConfigSection):
    """One source: a reader kind, its paths (files; a directory for ``oewn``) and a name.

    Example:
        >>> SourceSpec(kind="tsv", paths=["extra.tsv"], name="extra")
    """

    kind: SourceKind
    paths: tuple[str, ...] = Field(min_length=1)
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    lang_code: str | None = Field(default=None, description="wiktextract only: the language read (default en)")

    _tuples = field_validator("paths", mode="before")(_as_tuple)

    @model_validator(mode="after")
    def _lang_code(self) -> SourceSpec:
        if self.lang_code is not None and self.kind != "wiktextract":
            raise ValueError(f"lang_code is a wiktextract option (source kind is {self.kind!r})")
        return self

    def reader_options(self) -> dict[str, Any]:
        """Keyword arguments of the source's reader (and part of the artifact key when set)."""
        return {"lang_code": self.lang_code or "en"} if self.kind == "wiktextract" else {}


class DictionaryConfig(ConfigSection):
    """How a dictionary dataset is built: the parameters of ``defsentflow ingest dictionary``, the
    ``ingest-dictionary`` flow and a pipeline config's ``dictionary:`` section.

    Everything but ``name``, the source paths (inputs count by content) and ``workers`` is part of
    the artifact key (:meth:`key_fields`).

    Example:
        >>> DictionaryConfig(name="oewn", sources=[{"kind": "oewn", "paths": ["../shared/data/oewn/yaml"]}])
    """

    name: str
    sources: tuple[SourceSpec, ...] = Field(min_length=1)
    variant: Variant = "a"
    tokenizer: str | None = None
    seed: Seed = 0
    case_fold: bool = True
    max_chars: int = Field(default=MAX_CHARS, ge=1, le=LIMITS["count"])
    ratios: tuple[float, float, float] = DEFAULT_RATIOS
    workers: int = Field(default=2, ge=1, le=LIMITS["workers"])
    split_by: SplitBy = Field(
        "entry", description="entry: each entry's definitions in one split; gloss: each definition text in one "
                             "split under every entry (WordNet: a split by synset)")

    _tuples = field_validator("sources", "ratios", mode="before")(_as_tuple)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.match(NAME_PATTERN, v):
            raise ValueError(f"dataset name {v!r} must match {NAME_PATTERN} (letters, digits, . _ -)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> DictionaryConfig:
        if self.variant == "b" and len(self.sources) != 1:
            raise ValueError(f"variant b is a single source; got {len(self.sources)} sources")
        if self.variant == "c" and not self.tokenizer:
            raise ValueError("variant c needs a tokenizer (--tokenizer NAME_OR_PATH)")
        if self.variant != "c" and self.tokenizer:
            raise ValueError(f"--tokenizer is only used by variant c (variant is {self.variant!r})")
        if not all(math.isfinite(r) for r in (*self.ratios, sum(self.ratios))) or min(self.ratios) < 0 \
                or sum(self.ratios) <= 0:
            raise ValueError(f"ratios must be three finite, non-negative numbers with a finite, positive sum, "
                             f"got {list(self.ratios)}")
        require_distinct(self.source_names(), "source names")
        return self

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
            "sources": [{"kind": s.kind, "name": n, **s.reader_options()} for s, n in zip(self.sources, self.source_names())],
            "variant": self.variant, "seed": self.seed, "case_fold": self.case_fold,
            "max_chars": self.max_chars, "ratios": list(self.ratios),
            # only when not the default, so datasets split by entry keep their artifact keys
            **({"split_by": self.split_by} if self.split_by != "entry" else {}),
        }
