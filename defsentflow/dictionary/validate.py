"""Checks every record passes before it enters a dataset, and the normalisation applied after.

The same rules apply to all readers, so a definition is judged the same whether it came from
WordNet, a TSV file or JSONL.
"""

from __future__ import annotations

import re

from defsentflow.dictionary.records import DefinitionRecord, RejectedRecord

__all__ = ["MAX_CHARS", "check_record", "check_text", "lone_surrogate", "normalize_entry", "normalize_text", "printable",
           "raw_text", "undecodable"]

MAX_CHARS = 1000

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Bidirectional embeddings, overrides and isolates: they reorder how a line is shown ("Trojan Source").
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
# Readers decode with errors="surrogateescape": an invalid byte becomes a lone low surrogate.
_SURROGATE = re.compile(r"[\udc80-\udcff]")
# Any other lone surrogate comes from an escape in the text (JSON "\ud800"): not a character, and no
# UTF-8 writer (Parquet, DuckDB) takes it.
_LONE = re.compile(r"[\ud800-\udc7f\udd00-\udfff]")
_ANY_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def undecodable(text: str) -> bool:
    """True if ``text`` carries bytes that were not valid UTF-8 (decoded with surrogateescape)."""
    return _SURROGATE.search(text) is not None


def check_text(text: str, what: str, max_chars: int = MAX_CHARS) -> tuple[str, str] | None:
    """``(reason, detail)`` if ``text`` may not be stored, else None."""
    if text and len(text) <= max_chars and _ANY_BAD.search(text) is None and not text.isspace():
        return None  # the common case, in one regex pass
    if _SURROGATE.search(text):
        return "invalid_utf8", f"{what} has bytes that are not UTF-8"
    if m := _LONE.search(text):
        return "invalid_utf8", f"{what} has a lone surrogate U+{ord(m.group(0)):04X} at {m.start()} (an escape that is no character)"
    if not text:
        return "empty", f"{what} is empty"
    if not text.strip():
        return "whitespace_only", f"{what} is only whitespace"
    if m := _CONTROL.search(text):
        return "control_character", f"{what} has control character U+{ord(m.group(0)):04X} at {m.start()}"
    if m := _BIDI.search(text):
        return "control_character", f"{what} has bidirectional control U+{ord(m.group(0)):04X} at {m.start()}"
    if len(text) > max_chars:
        return "too_long", f"{what} has {len(text)} characters (limit {max_chars})"
    return None


def check_record(rec: DefinitionRecord, max_chars: int = MAX_CHARS) -> RejectedRecord | None:
    """The quarantine record for ``rec`` if its entry or definition fails a check, else None."""
    entry, definition = rec.entry, rec.definition
    extra = [(what, v) for what, v in (("pos", rec.pos), ("synset", rec.synset)) if v and _LONE.search(v)]
    if (entry and definition and len(entry) <= max_chars and len(definition) <= max_chars  # the common case
            and _ANY_BAD.search(entry) is None and _ANY_BAD.search(definition) is None
            and not entry.isspace() and not definition.isspace() and not extra):
        return None
    bad = check_text(entry, "entry", max_chars) or check_text(definition, "definition", max_chars) or \
        (check_text(extra[0][1], extra[0][0], max_chars) if extra else None)
    if bad is None:
        return None
    return RejectedRecord(rec.source, rec.file, rec.line, bad[0], raw_text(rec), bad[1])  # type: ignore[arg-type]


def raw_text(rec: DefinitionRecord) -> str:
    """The record as one tab-separated line, with undecodable bytes shown as ``\\xNN``."""
    return printable(f"{rec.entry}\t{rec.definition}")


def printable(text: str) -> str:
    """``text`` with undecodable bytes (surrogate escapes) shown as ``\\xNN``, other lone surrogates
    as ``\\uDNNN``."""
    if _LONE.search(text):
        text = _LONE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def lone_surrogate(text: str) -> bool:
    """True if ``text`` holds a surrogate that is not an undecodable byte (an escape such as ``\\ud800``)."""
    return _LONE.search(text) is not None


def normalize_text(text: str) -> str:
    """Strip and collapse runs of whitespace, so spacing differences are not new definitions."""
    return " ".join(text.split())


def normalize_entry(entry: str, case_fold: bool = True) -> str:
    """An entry as a dataset stores it: whitespace-normalised and (by default) lower-cased."""
    entry = " ".join(entry.split())
    return entry.lower() if case_fold else entry
