"""The training definitions of a dictionary dataset, as (definition, target entry) pairs.

By default only the ``train`` split (the reverse dictionary then queries definitions the model
never saw); ``splits=SPLITS`` trains on every definition, as the papers do.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.dictionary import tables
from defsentflow.dictionary.store import resolve_dictionary
from defsentflow.storage import combine_hashes, data_root, hash_text
from defsentflow.storage.paths import from_root, to_root

__all__ = ["ALL_SPLITS", "TRAIN_SPLIT", "TrainingData", "TrainingDataRef", "load_training_data", "splits_for"]

TRAIN_SPLIT: tuple[str, ...] = ("train",)
ALL_SPLITS: tuple[str, ...] = ("train", "dev", "test")


def splits_for(train_entries: str) -> tuple[str, ...]:
    """The splits a section's ``train_entries`` (``train_split`` | ``all``) trains on."""
    if train_entries not in ("train_split", "all"):
        raise ValueError(f"train_entries must be 'train_split' or 'all', got {train_entries!r}")
    return TRAIN_SPLIT if train_entries == "train_split" else ALL_SPLITS


@dataclass(frozen=True)
class TrainingData:
    """The training definitions as (definition, target entry) pairs; rows of the head = ``entries``.

    ``splits``: the dictionary splits they come from; ``variant``: the dataset variant (a/b/c, None
    when unknown), which sets the papers' batch size.
    """

    dictionary: str
    dictionary_hash: str
    train_hash: str
    entries: list[str]
    definitions: list[str]
    targets: np.ndarray
    table: pa.Table = field(repr=False, compare=False)
    splits: tuple[str, ...] = TRAIN_SPLIT
    variant: str | None = None
    source: str | None = None             # the dictionary artifact's folder (None: a table passed in)
    max_train_entries: int | None = None
    single_token_of: str | None = None    # DefSent: only entries that are one token of this model's vocabulary

    @property
    def definition_entries(self) -> list[str]:
        return [self.entries[t] for t in self.targets]

    def ref(self, root: str | os.PathLike | None = None) -> TrainingDataRef:
        """What a worker needs to read these definitions again (no catalog): the dictionary folder
        relative to the data root, the subset and splits, and the content key to check."""
        if self.source is None:
            raise ValueError("training data read from a table has no folder to refer to; ingest the dictionary")
        return TrainingDataRef(dictionary=self.dictionary, folder=to_root(data_root(root), self.source),
                               max_train_entries=self.max_train_entries, splits=self.splits,
                               train_hash=self.train_hash, variant=self.variant, single_token_of=self.single_token_of)


@dataclass(frozen=True)
class TrainingDataRef:
    """Training data by reference: a few hundred bytes however large the dictionary (what a fanned-out
    candidate carries instead of its definitions)."""

    dictionary: str
    folder: str                           # the dictionary artifact, relative to the data root
    max_train_entries: int | None
    splits: tuple[str, ...]
    train_hash: str
    variant: str | None = None
    single_token_of: str | None = None    # the model whose single-token entries only (DefSent), before the cap

    def load(self, root: str | os.PathLike) -> TrainingData:
        """The definitions, read from the dictionary folder under ``root``; the content key must match.

        Raises:
            ValueError: the dictionary's files changed since the candidate was planned (one line).
        """
        return _read_cached(str(from_root(root, self.folder)), self)


@functools.lru_cache(maxsize=4)  # a worker runs many candidates of one step: read the dictionary once
def _read_cached(folder: str, ref: TrainingDataRef) -> TrainingData:
    table = pq.read_table(Path(folder) / "definitions.parquet", columns=["entry", "definition", "split"])
    data = _from_table(table, ref.dictionary, ref.max_train_entries, ref.splits, variant=ref.variant, source=folder,
                       single_token_of=ref.single_token_of)
    if data.train_hash != ref.train_hash:
        raise ValueError(f"dictionary {ref.dictionary!r} at {folder} changed since its candidates were planned "
                         f"(training content {data.train_hash[:12]}, expected {ref.train_hash[:12]})")
    return data


def load_training_data(dictionary: str | pa.Table, max_train_entries: int | None = None, *,
                       splits: tuple[str, ...] = TRAIN_SPLIT, root: str | os.PathLike | None = None,
                       single_token_of: str | None = None) -> TrainingData:
    """The definitions of the dictionary's ``splits``, optionally a deterministic subset of their entries.

    The subset keeps the entries with the smallest hash of their text, so it is the same on every
    machine and grows stably with ``max_train_entries``. ``single_token_of`` (DefSent: a model's
    folder or name) keeps only the entries that are one token of its vocabulary, *before* the subset,
    so ``max_train_entries`` counts entries DefSent can train on.
    """
    source = None
    if isinstance(dictionary, str):
        source = str(resolve_dictionary(dictionary, root)[1])
    table = tables.load_dictionary_table(dictionary, root=root)
    name = dictionary if isinstance(dictionary, str) else "<table>"
    variant = tables.dictionary_variant(dictionary, root=root)
    return _from_table(table, name, max_train_entries, tuple(splits), variant=variant, source=source,
                       single_token_of=single_token_of)


def _from_table(table: pa.Table, dictionary: str, max_train_entries: int | None, splits: tuple[str, ...], *,
                variant: str | None, source: str | None, single_token_of: str | None = None) -> TrainingData:
    missing = [c for c in ("entry", "definition", "split") if c not in table.column_names]
    if missing:
        raise ValueError(f"dictionary {dictionary} lacks columns {missing}")
    entry = table.column("entry").to_pylist()
    definition = table.column("definition").to_pylist()
    split = table.column("split").to_pylist()
    wanted = set(splits)
    train = [i for i, s in enumerate(split) if s in wanted]
    entries = sorted({entry[i] for i in train})
    if single_token_of is not None:
        from defsentflow.model.targets import single_token_entries  # lazy: loads a tokenizer

        entries = [e for e, one in zip(entries, single_token_entries(single_token_of, entries)[0]) if one]
    if max_train_entries is not None and len(entries) > max_train_entries:
        entries = sorted(sorted(entries, key=lambda e: hash_text(f"pst-subset\x1f{e}"))[:max_train_entries])
    index = {e: k for k, e in enumerate(entries)}
    rows = [i for i in train if entry[i] in index]
    if not rows:
        raise ValueError(f"dictionary {dictionary!r} has no training definitions (split in {list(splits)})")
    defs = [definition[i] for i in rows]
    targets = np.fromiter((index[entry[i]] for i in rows), dtype=np.int64, count=len(rows))
    train_hash = combine_hashes([hash_text("\x1e".join(entries)), hash_text("\x1e".join(defs)),
                                 hash_text(targets.tobytes().hex())])
    return TrainingData(dictionary=dictionary, dictionary_hash=tables.dictionary_content_hash(table),
                        train_hash=train_hash, entries=entries, definitions=defs, targets=targets, table=table,
                        splits=tuple(splits), variant=variant, source=source, max_train_entries=max_train_entries,
                        single_token_of=single_token_of)
