"""Merge the records of any number of sources into one dictionary dataset.

The same entry from several sources is one entry; identical (normalised) definitions of an
entry are stored once, with the list of every source that gave them; the first record of a
definition (in source, file and line order) gives its part of speech, synset and metadata.
Every record read is counted exactly once: accepted (a new definition), duplicate, excluded
(by the variant's entry filter) or quarantined, so ``read = accepted + duplicates + excluded
+ quarantined`` per source and in total.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import pyarrow as pa

from defsentflow.dictionary.records import RejectedRecord, Record
from defsentflow.dictionary.schemas import DEFINITIONS_SCHEMA, EXAMPLES_SCHEMA, QUARANTINE_SCHEMA
from defsentflow.dictionary.split import DEFAULT_RATIOS, SplitBy, split_rows
from defsentflow.dictionary.validate import MAX_CHARS, check_record, check_text, normalize_entry, normalize_text, printable

__all__ = ["SourceCounts", "MergedDictionary", "merge_records", "RAW_LIMIT"]

# Quarantined raw text is cut here: an over-long record is kept as evidence, not as a copy.
RAW_LIMIT = 10_000


@dataclass
class SourceCounts:
    """How one source's records were accounted for."""

    read: int = 0
    accepted: int = 0
    duplicates: int = 0
    excluded: int = 0
    quarantined: int = 0

    def balanced(self) -> bool:
        return self.read == self.accepted + self.duplicates + self.excluded + self.quarantined


@dataclass(frozen=True)
class MergedDictionary:
    """The dataset's tables and its accounting."""

    definitions: pa.Table
    examples: pa.Table
    quarantine: pa.Table
    counts: dict[str, SourceCounts]
    examples_quarantined: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def total(self) -> SourceCounts:
        t = SourceCounts()
        for c in self.counts.values():
            t.read += c.read
            t.accepted += c.accepted
            t.duplicates += c.duplicates
            t.excluded += c.excluded
            t.quarantined += c.quarantined
        return t


class _Quarantine:
    def __init__(self) -> None:
        self.rows: dict[str, list] = {name: [] for name in QUARANTINE_SCHEMA.names}
        self.reasons: dict[str, int] = {}

    def add(self, rej: RejectedRecord, detail_prefix: str = "") -> None:
        raw = rej.raw
        detail = detail_prefix + rej.detail
        if len(raw) > RAW_LIMIT:
            raw = raw[:RAW_LIMIT]
            detail += f" (raw text cut to {RAW_LIMIT} characters)"
        for k, v in (("source", rej.source), ("file", rej.file), ("line", rej.line), ("reason", rej.reason),
                     ("detail", detail), ("raw", raw)):
            self.rows[k].append(v)
        self.reasons[rej.reason] = self.reasons.get(rej.reason, 0) + 1

    def table(self) -> pa.Table:
        return pa.table(self.rows, schema=QUARANTINE_SCHEMA)


def merge_records(
    sources: Iterable[tuple[str, Iterable[Record]]],
    *,
    case_fold: bool = True,
    max_chars: int = MAX_CHARS,
    seed: int = 0,
    ratios: tuple[float, float, float] = DEFAULT_RATIOS,
    split_by: SplitBy = "entry",
    entry_filter: Callable[[Sequence[str]], list[bool]] | None = None,
) -> MergedDictionary:
    """Merge ``(source name, records)`` pairs, in order, into one dataset.

    Args:
        sources: each source's name and its records (a reader's output).
        case_fold: lower-case entries, so "Dog" and "dog" are one entry.
        max_chars: longer entries or definitions are quarantined as ``too_long``.
        seed: the split seed (see :func:`defsentflow.dictionary.split.assign_split`).
        ratios: train/dev/test proportions.
        split_by: ``entry`` (every definition of an entry in one split) or ``gloss`` (every
            occurrence of a definition text, under any entry, in one split: for WordNet, a split
            by synset, so no gloss is trained under one lemma and tested under another).
        entry_filter: for variant c, tells which entries to keep (others count as excluded).

    Example:
        >>> m = merge_records([("tsv", read_tsv("a.tsv")), ("jsonl", read_jsonl("b.jsonl"))])
        >>> m.definitions.num_rows, m.total().read
    """
    index: dict[tuple[str, str], int] = {}
    entries: list[str] = []
    texts: list[str] = []
    pos: list[str | None] = []
    synsets: list[str | None] = []
    origins: list[str] = []
    def_sources: list[list[str]] = []
    metas: list[str | None] = []
    examples: list[dict[str, None]] = []  # insertion-ordered sets
    counts: dict[str, SourceCounts] = {}
    quarantine = _Quarantine()
    bad_examples: set[tuple[str, str]] = set()
    examples_quarantined = 0

    for name, records in sources:
        c = counts.setdefault(name, SourceCounts())
        for rec in records:
            c.read += 1
            bad = rec if isinstance(rec, RejectedRecord) else check_record(rec, max_chars)
            if bad is not None:
                quarantine.add(bad)
                c.quarantined += 1
                continue
            key = (normalize_entry(rec.entry, case_fold), normalize_text(rec.definition))
            i = index.get(key)
            if i is None:
                i = index[key] = len(entries)
                entries.append(key[0])
                texts.append(key[1])
                pos.append(rec.pos)
                synsets.append(rec.synset)
                origins.append(name)
                def_sources.append([name])
                metas.append(json.dumps(rec.meta, sort_keys=True, ensure_ascii=False, default=str) if rec.meta else None)
                examples.append({})
                c.accepted += 1
            else:
                c.duplicates += 1
                if name not in def_sources[i]:
                    def_sources[i].append(name)
                pos[i] = pos[i] or rec.pos
                synsets[i] = synsets[i] or rec.synset
            for ex in rec.examples:
                text = normalize_text(ex)
                if text in examples[i]:
                    continue
                problem = check_text(ex, "example", max_chars)
                if problem is None:
                    examples[i][text] = None
                elif (name, ex) not in bad_examples:  # an example shared by many senses is quarantined once
                    bad_examples.add((name, ex))
                    examples_quarantined += 1
                    quarantine.add(RejectedRecord(name, rec.file, rec.line, problem[0], printable(ex), problem[1]),  # type: ignore[arg-type]
                                   detail_prefix=f"example of {key[0]!r}: ")

    keep_entry = _entry_mask(sorted(set(entries)), entry_filter)
    for i, e in enumerate(entries):
        if not keep_entry[e]:
            counts[origins[i]].accepted -= 1
            counts[origins[i]].excluded += 1

    order = sorted((i for i in range(len(entries)) if keep_entry[entries[i]]), key=lambda i: (entries[i], i))
    split_of = split_rows([entries[i] for i in order], [texts[i] for i in order], split_by, seed, ratios)
    definitions = pa.table({
        "def_id": list(range(len(order))),
        "entry": [entries[i] for i in order],
        "definition": [texts[i] for i in order],
        "split": split_of,
        "pos": [pos[i] for i in order],
        "synset": [synsets[i] for i in order],
        "sources": [def_sources[i] for i in order],
        "meta": [metas[i] for i in order],
    }, schema=DEFINITIONS_SCHEMA)
    ex_rows: dict[str, list] = {k: [] for k in EXAMPLES_SCHEMA.names}
    for def_id, i in enumerate(order):
        for ex in examples[i]:
            ex_rows["def_id"].append(def_id)
            ex_rows["entry"].append(entries[i])
            ex_rows["example"].append(ex)
            ex_rows["split"].append(split_of[def_id])
    return MergedDictionary(definitions, pa.table(ex_rows, schema=EXAMPLES_SCHEMA), quarantine.table(), counts,
                            examples_quarantined, dict(sorted(quarantine.reasons.items())))


def _entry_mask(unique: list[str], entry_filter: Callable[[Sequence[str]], list[bool]] | None) -> dict[str, bool]:
    if entry_filter is None:
        return dict.fromkeys(unique, True)
    keep: dict[str, bool] = {}
    for start in range(0, len(unique), 4096):
        batch = unique[start:start + 4096]
        keep.update(zip(batch, entry_filter(batch)))
    return keep
