"""The DefSent+ entry matrix folder's one reader (and its writer): :class:`EntryMatrix`.

A matrix folder (``<root>/pst/entry_matrices/<key>/`` for the pipeline's, any folder for
:meth:`EntryMatrix.save`) holds:

* ``matrix.npy``: float32 ``[entries, hidden]`` (memory-mappable);
* ``entries.parquet``: columns ``row``, ``entry`` (row ``i`` of the matrix is ``entry``);
* ``meta.json``: encoding (``ac``/``amp``), ICA, the encoder (a reference relative to the folder,
  or the name it was given) and its content key, ``max_length``, ``autocast``, the shape and the
  entry-space statistics;
* ``ica.npz`` when the matrix was ICA-transformed (:class:`~defsentflow.model.ica.IcaTransform`);
* ``entry_space.png`` for the pipeline's matrices.

:meth:`EntryMatrix.load` is the one reader: training (the frozen head), word prediction, the
reverse dictionary's ICA space, serving, export and the entry-space report read a folder through
it. The builder is training's (:func:`defsentflow.training.entry_matrix.encode_entry_matrix`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.model.ica import IcaTransform
from defsentflow.model.record import MATRIX_FILE, matrix_folder, resolve_ref
from defsentflow.model.targets import entry_targets
from defsentflow.storage.atomic import atomic_dir

__all__ = ["ENTRIES_FILE", "ENTRY_SCHEMA", "META_FILE", "MATRIX_FILE", "EntryMatrix"]

ENTRY_SCHEMA = pa.schema([pa.field("row", pa.int64(), nullable=False), pa.field("entry", pa.string(), nullable=False)])
ENTRIES_FILE, META_FILE = "entries.parquet", "meta.json"


@dataclass
class EntryMatrix:
    """Entries and their vectors: row ``i`` of ``matrix`` (float32) belongs to ``entries[i]``.

    Example:
        >>> em = EntryMatrix.load("storage/pst/entry_matrices/<key>", mmap=True)
        >>> em.rows(["cat"]), em.ica is not None
    """

    entries: list[str]
    matrix: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    ica: IcaTransform | None = None

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or len(self.entries) != self.matrix.shape[0]:
            raise ValueError(f"{len(self.entries)} entries but a matrix of shape {self.matrix.shape}")

    @property
    def row_of(self) -> dict[str, int]:
        return {e: i for i, e in enumerate(self.entries)}

    def rows(self, entries: list[str] | tuple[str, ...]) -> np.ndarray:
        """Row of each of ``entries`` (DefSent+ targets); a missing entry is an error naming it."""
        return entry_targets(self.row_of, entries)

    def save(self, path: str | os.PathLike, *, extra_files: dict[str, Any] | None = None) -> Path:
        """Write the folder's files atomically (``extra_files``: name -> callable writing into the
        temporary folder, e.g. the entry-space picture)."""
        with atomic_dir(path) as tmp:
            with open(tmp / MATRIX_FILE, "wb") as fh:
                np.save(fh, np.ascontiguousarray(self.matrix, dtype=np.float32))
            table = pa.table({"row": np.arange(len(self.entries), dtype=np.int64), "entry": self.entries},
                             schema=ENTRY_SCHEMA)
            pq.write_table(table, tmp / ENTRIES_FILE, compression="zstd")
            (tmp / META_FILE).write_text(json.dumps(self.meta, indent=2, sort_keys=True, default=str))
            if self.ica is not None:
                self.ica.save(tmp)
            for write in (extra_files or {}).values():
                write(tmp)
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, mmap: bool = False) -> EntryMatrix:
        """The matrix saved in folder ``path`` (``mmap``: the vectors stay memory-mapped, read-only).

        Raises:
            FileNotFoundError: ``path`` is not an entry-matrix folder (one line naming it).
        """
        p = Path(matrix_folder(str(path)))  # a reference written before the folder form named the file
        if not (p / MATRIX_FILE).is_file() or not (p / ENTRIES_FILE).is_file():
            raise FileNotFoundError(f"{p}: not an entry matrix (needs {MATRIX_FILE} and {ENTRIES_FILE})")
        matrix = np.load(p / MATRIX_FILE, mmap_mode="r" if mmap else None)
        table = pq.read_table(p / ENTRIES_FILE)
        if "row" in table.column_names:
            table = table.sort_by("row")
        meta = json.loads((p / META_FILE).read_text()) if (p / META_FILE).is_file() else {}
        ica = IcaTransform.load(p) if (p / IcaTransform.FILE).is_file() else None
        return cls(entries=table.column("entry").to_pylist(), matrix=matrix, meta=meta, ica=ica)

    def encoder(self, path: str | os.PathLike) -> str | None:
        """The model that built the matrix saved in folder ``path`` (resolved reference)."""
        return resolve_ref(path, self.meta.get("encoder"))
