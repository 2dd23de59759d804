"""The training definitions of a dictionary dataset, as (definition, target entry) pairs.

By default only the ``train`` split (the reverse dictionary then queries definitions the model
never saw); ``splits=SPLITS`` trains on every definition, as the papers do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from defsentflow.dictionary import tables
from defsentflow.storage import combine_hashes, hash_text

__all__ = ["ALL_SPLITS", "TRAIN_SPLIT", "TrainingData", "load_training_data", "splits_for"]

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

    @property
    def definition_entries(self) -> list[str]:
        return [self.entries[t] for t in self.targets]


def load_training_data(dictionary: str | pa.Table, max_train_entries: int | None = None, *,
                       splits: tuple[str, ...] = TRAIN_SPLIT, root: str | os.PathLike | None = None) -> TrainingData:
    """The definitions of the dictionary's ``splits``, optionally a deterministic subset of their entries.

    The subset keeps the entries with the smallest hash of their text, so it is the same on every
    machine and grows stably with ``max_train_entries``.
    """
    table = tables.load_dictionary_table(dictionary, root=root)
    missing = [c for c in ("entry", "definition", "split") if c not in table.column_names]
    if missing:
        name = dictionary if isinstance(dictionary, str) else "<table>"
        raise ValueError(f"dictionary {name} lacks columns {missing}")
    entry = table.column("entry").to_pylist()
    definition = table.column("definition").to_pylist()
    split = table.column("split").to_pylist()
    wanted = set(splits)
    train = [i for i, s in enumerate(split) if s in wanted]
    entries = sorted({entry[i] for i in train})
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
    name = dictionary if isinstance(dictionary, str) else "<table>"
    return TrainingData(dictionary=name, dictionary_hash=tables.dictionary_content_hash(table), train_hash=train_hash,
                        entries=entries, definitions=defs, targets=targets, table=table, splits=tuple(splits),
                        variant=tables.dictionary_variant(dictionary, root=root))
