"""Merge the records of any number of sources into one dictionary dataset.

The same entry from several sources is one entry; identical (normalised) definitions of an
entry are stored once, with the list of every source that gave them; the first record of a
definition (in source, file and line order) gives its part of speech, synset and metadata.
Every record read is counted exactly once: accepted (a new definition), duplicate, excluded
(by the variant's entry filter) or quarantined, so ``read = accepted + duplicates + excluded
+ quarantined`` per source and in total.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from defsentflow.dictionary.records import Record
from defsentflow.dictionary.split import DEFAULT_RATIOS, SplitBy
from defsentflow.dictionary.stream_merge import FILES, RAW_LIMIT, SourceCounts, merge_to_directory
from defsentflow.dictionary.validate import MAX_CHARS

__all__ = ["SourceCounts", "MergedDictionary", "merge_records", "RAW_LIMIT"]


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
    import pyarrow.parquet as pq  # lazy: pyarrow loads only where it is used

    with tempfile.TemporaryDirectory(prefix="defsentflow-merge-") as tmp:
        outcome = merge_to_directory(sources, tmp, case_fold=case_fold, max_chars=max_chars, seed=seed, ratios=ratios,
                                     split_by=split_by, entry_filter=entry_filter)
        definitions, examples, quarantine = (pq.read_table(Path(tmp) / f) for f in FILES)
    return MergedDictionary(definitions, examples, quarantine, outcome.counts, outcome.examples_quarantined,
                            outcome.reasons)
