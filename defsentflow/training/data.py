"""The training split of a dictionary dataset, as (definition, target entry) pairs."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

__all__ = ["TrainingData", "load_training_data"]


@dataclass(frozen=True)
class TrainingData:
    """The training split as (definition, target entry) pairs; rows of the head = ``entries``."""

    dictionary: str
    dictionary_hash: str
    train_hash: str
    entries: list[str]
    definitions: list[str]
    targets: np.ndarray
    table: pa.Table = field(repr=False, compare=False)

    @property
    def definition_entries(self) -> list[str]:
        return [self.entries[t] for t in self.targets]


def load_training_data(dictionary: str | pa.Table, max_train_entries: int | None = None, *,
                       root: str | os.PathLike | None = None) -> TrainingData:
    """The dictionary's ``train`` split, optionally a deterministic subset of its entries.

    The subset keeps the entries with the smallest hash of their text, so it is the same on every
    machine and grows stably with ``max_train_entries``.
    """
    from defsentflow.evaluation.revdict import dictionary_content_hash, load_dictionary_table
    from defsentflow.storage import combine_hashes, hash_text

    table = load_dictionary_table(dictionary, root=root)
    missing = [c for c in ("entry", "definition", "split") if c not in table.column_names]
    if missing:
        name = dictionary if isinstance(dictionary, str) else "<table>"
        raise ValueError(f"dictionary {name} lacks columns {missing}")
    entry = table.column("entry").to_pylist()
    definition = table.column("definition").to_pylist()
    split = table.column("split").to_pylist()
    train = [i for i, s in enumerate(split) if s == "train"]
    entries = sorted({entry[i] for i in train})
    if max_train_entries is not None and len(entries) > max_train_entries:
        entries = sorted(sorted(entries, key=lambda e: hash_text(f"pst-subset\x1f{e}"))[:max_train_entries])
    index = {e: k for k, e in enumerate(entries)}
    rows = [i for i in train if entry[i] in index]
    if not rows:
        raise ValueError(f"dictionary {dictionary!r} has no training definitions (split == 'train')")
    defs = [definition[i] for i in rows]
    targets = np.fromiter((index[entry[i]] for i in rows), dtype=np.int64, count=len(rows))
    train_hash = combine_hashes([hash_text("\x1e".join(entries)), hash_text("\x1e".join(defs)),
                                 hash_text(targets.tobytes().hex())])
    name = dictionary if isinstance(dictionary, str) else "<table>"
    return TrainingData(dictionary=name, dictionary_hash=dictionary_content_hash(table), train_hash=train_hash,
                        entries=entries, definitions=defs, targets=targets, table=table)
