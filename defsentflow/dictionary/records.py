"""What the dictionary readers yield: accepted definition records and rejected (quarantined) ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from defsentflow.config_tools import DictionarySplit

__all__ = [
    "DefinitionRecord",
    "RejectedRecord",
    "Record",
    "QuarantineReason",
    "SourceKind",
    "SOURCE_KINDS",
    "Variant",
    "VARIANTS",
    "Split",
    "SPLITS",
    "check_choice",
]

SourceKind = Literal["oewn", "oxford", "tsv", "jsonl", "wiktextract"]
SOURCE_KINDS: tuple[str, ...] = get_args(SourceKind)

# DefSent+ dataset variants: a = union of the sources, b = one source, c = entries that are one
# whole token in a tokenizer's vocabulary.
Variant = Literal["a", "b", "c"]
VARIANTS: tuple[str, ...] = get_args(Variant)

Split = DictionarySplit
SPLITS: tuple[str, ...] = get_args(Split)

QuarantineReason = Literal[
    "malformed",  # the record does not have the source format's shape (fields, JSON, YAML structure)
    "empty",  # entry or definition is the empty string (or the line is empty)
    "whitespace_only",
    "too_long",  # entry or definition longer than the limit (1,000 characters by default)
    "control_character",  # a C0/C1 control character (tab and newline included) in entry or definition
    "invalid_utf8",  # bytes that do not decode as UTF-8
    "dangling_reference",  # an OEWN sense whose synset is defined nowhere
]


def check_choice(value: str, choices: tuple[str, ...], what: str) -> str:
    """Reject a value outside a ``Literal``'s choices, naming the valid ones."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of: {', '.join(choices)}")
    return value


@dataclass(frozen=True, slots=True)
class DefinitionRecord:
    """One (entry, definition) pair as a reader found it, before normalisation and checks.

    Example:
        >>> DefinitionRecord("dog", "a domesticated canid", source="tsv", file="d.tsv", line=3)
    """

    entry: str
    definition: str
    source: str
    file: str
    line: int
    pos: str | None = None
    synset: str | None = None
    examples: tuple[str, ...] = ()
    meta: Mapping[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class RejectedRecord:
    """A record that goes to the ``quarantine`` table: where it was, why, and its raw text.

    Example:
        >>> RejectedRecord("tsv", "d.tsv", 7, "malformed", "dog", "expected 2 tab-separated fields, got 1")
    """

    source: str
    file: str
    line: int
    reason: QuarantineReason
    raw: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


Record = DefinitionRecord | RejectedRecord
