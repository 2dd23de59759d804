"""The model record: ``defsentflow.json`` in every model folder this project writes, read and written here only
(:mod:`defsentflow.model` owns the model folder: this record, the head it defines, the id rule).

A record says how a model was trained and how it is evaluated: its pooling, the pooler, the
frozen head it learned against (DefSent's word-prediction layer of ``base_model``; DefSent+'s entry
matrix), the splits it trained on, and the training statistics. Every reference in it is
portable:

* a model or entry matrix made in the data root is a path RELATIVE TO THE MODEL FOLDER
  (``../../../pst/entry_matrices/<key>``), so a copied or moved data root reads its own files;
* a model the user named (``minilm``, a Hugging Face id, a folder outside the data root) is kept
  as it was named;
* ``entry_matrix_key`` and ``base_model_hash`` are content keys.

No absolute path inside a data root is ever written (:func:`model_ref` turns one into a relative
reference), and the entry matrix is named by its folder only (a record written before the folder form,
naming ``matrix.npy``, is read as its folder). A record is input like every other record: read at
most ``LIMITS["record_bytes"]`` (64 MiB) and ``LIMITS["nesting"]`` levels deep, each field checked
against its declared type (one line naming the file and the field).

Example:
    >>> rec = read_model_record("storage/models/pst/<key>")
    >>> rec.pooling, rec.entry_matrix_dir("storage/models/pst/<key>")
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from defsentflow.limits import LIMITS
from defsentflow.storage.atomic import atomic_path
from defsentflow.storage.bounded_json import read_json_file
from defsentflow.storage.paths import to_root

__all__ = ["FIELDS", "MAX_RECORD_BYTES", "RECORD_FILE", "ModelRecord", "matrix_folder", "model_ref", "read_model_record",
           "record_of", "resolve_ref", "steady_record", "write_model_record"]

RECORD_FILE = "defsentflow.json"
MAX_RECORD_BYTES = LIMITS["record_bytes"]
"""A record larger than this is refused, as every other record (a million training steps keep ~25 MB of losses)."""
MATRIX_FILE = "matrix.npy"  # an entry-matrix folder's vectors (records before the folder form named this file)

_STR, _BOOL, _INT, _FLOAT = (str,), (bool,), (int,), (int, float)


@dataclass(frozen=True)
class ModelRecord:
    """``defsentflow.json``: the typed fields every reader uses; anything else is kept in ``extra``.

    A field the record does not hold is None (or empty): what that means for the model's head is
    said once, in :data:`defsentflow.model.head.HEAD_DEFAULTS`; ``train_splits`` empty means
    "unknown" (readers fall back to ``train``).
    """

    pooling: str | None = None
    method: str | None = None
    use_pooler: bool | None = None
    max_seq_length: int | None = None
    normalize: bool | None = None
    base_model: str | None = None           # a model reference (see the module docstring)
    base_model_hash: str | None = None
    decoder: str | None = None              # mlm_head | input_embeddings | entry_matrix
    pooler_activation: str | None = None
    pooler_source: str | None = None
    family: str | None = None
    entry_encoder: str | None = None        # the model that built the entry matrix (a reference)
    entry_encoding: str | None = None       # ac | amp
    entry_matrix: str | None = None         # the entry matrix FOLDER (relative to the model folder)
    entry_matrix_key: str | None = None
    ica: bool = False
    normalize_logits: bool | None = None
    dictionary: str | None = None
    train_splits: tuple[str, ...] = ()
    pst_step: int | None = None
    started_from: str | None = None         # separate: false: the encoder this one continued (a reference)
    model_id: str | None = None
    config: dict[str, Any] | None = None    # the TrainConfig (or the section) that trained it
    n_examples: int | None = None
    n_targets: int | None = None
    steps: int | None = None
    final_loss: float | None = None
    losses: tuple[float, ...] = ()
    train_seconds: float | None = None
    completed: bool | None = None
    frozen: tuple[str, ...] = ()
    code_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    # -- reading --------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = RECORD_FILE) -> ModelRecord:
        """A record from its JSON object; a field of the wrong type is a ValueError naming it and ``source``."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{source}: a model record is a JSON object, got {type(data).__name__}")
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            spec = _FIELDS.get(key)
            if spec is None:
                extra[str(key)] = value
                continue
            kwargs[key] = _checked(key, value, spec, source)
        return cls(**kwargs, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``defsentflow.json`` (flat: ``extra`` merged in, None left out)."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "extra" and v is not None}
        for k in ("train_splits", "losses", "frozen"):
            out[k] = list(out[k])
            if not out[k]:
                out.pop(k)
        return {**self.extra, **out}

    def replace(self, **changes: Any) -> ModelRecord:
        """A copy with ``changes``; unknown names go to ``extra``."""
        known = {k: v for k, v in changes.items() if k in _FIELDS}
        extra = {k: v for k, v in changes.items() if k not in _FIELDS}
        return dataclasses.replace(ModelRecord.from_dict({**self.to_dict(), **known}), extra={**self.extra, **extra})

    # -- what readers need ----------------------------------------------------------------------------
    @property
    def trained_splits(self) -> tuple[str, ...]:
        """The splits the model trained on (``train`` when the record does not say)."""
        return self.train_splits or ("train",)

    def base_model_path(self, model_dir: str | os.PathLike) -> str | None:
        """``base_model`` resolved (a folder path, or the name it was given)."""
        return resolve_ref(model_dir, self.base_model)

    def entry_encoder_path(self, model_dir: str | os.PathLike) -> str | None:
        """``entry_encoder`` resolved (a folder path, or the name it was given)."""
        return resolve_ref(model_dir, self.entry_encoder)

    def entry_matrix_dir(self, model_dir: str | os.PathLike) -> Path | None:
        """The folder of the entry matrix the model trained against (None: not a DefSent+ model)."""
        ref = resolve_ref(model_dir, self.entry_matrix)
        if not ref:
            return None
        return Path(matrix_folder(ref))


def _checked(key: str, value: Any, spec: tuple[type, ...] | str, source: str) -> Any:
    if value is None:
        return None
    if spec == "strs":
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{source}: {key!r} must be a list of strings")
        return tuple(value)
    if spec == "floats":
        if not isinstance(value, list | tuple) or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                                         for v in value):
            raise ValueError(f"{source}: {key!r} must be a list of numbers")
        return tuple(float(v) for v in value)
    if spec == "dict":
        if not isinstance(value, dict):
            raise ValueError(f"{source}: {key!r} must be an object")
        return value
    assert isinstance(spec, tuple)
    if isinstance(value, bool) and bool not in spec:  # True is an int to Python, not to a record
        raise ValueError(f"{source}: {key!r} must be {spec[0].__name__}, got a boolean")
    if not isinstance(value, spec):
        raise ValueError(f"{source}: {key!r} must be {spec[0].__name__}, got {type(value).__name__}")
    return float(value) if spec is _FLOAT else value


# A field's check, from its declared type: the field list is the dataclass above, once.
_SPECS: dict[str, tuple[type, ...] | str] = {
    "str": _STR, "str | None": _STR, "bool": _BOOL, "bool | None": _BOOL, "int | None": _INT,
    "float | None": _FLOAT, "tuple[str, ...]": "strs", "tuple[float, ...]": "floats", "dict[str, Any] | None": "dict",
}
_FIELDS: dict[str, tuple[type, ...] | str] = {}
for _f in dataclasses.fields(ModelRecord):
    if _f.name != "extra":
        if _f.type not in _SPECS:  # a new field needs its check: refused at import, never read as its default
            raise TypeError(f"ModelRecord.{_f.name}: no check for a field of type {_f.type!r}")
        _FIELDS[_f.name] = _SPECS[_f.type]
FIELDS: tuple[str, ...] = tuple(_FIELDS)
"""The record's fields, in declaration order (anything else a record holds is kept in ``extra``)."""


def matrix_folder(ref: str) -> str:
    """An entry-matrix reference as its folder: a reference to its ``matrix.npy`` (written before the
    folder form) names the folder that holds it."""
    path = Path(ref)
    return str(path.parent) if path.name == MATRIX_FILE else ref


# -- references --------------------------------------------------------------------------------------------
def model_ref(value: str | os.PathLike | None, model_dir: str | os.PathLike, root: str | os.PathLike) -> str | None:
    """How ``value`` (a model or matrix folder, or a name) is written in the record of ``model_dir``.

    A path inside the data root ``root`` becomes a path relative to ``model_dir`` (POSIX form); a
    path elsewhere or a name (``minilm``, a hub id) is kept as given.
    """
    if value is None:
        return None
    text = str(value)
    in_root = to_root(root, text)  # the one rule for "inside the data root" (a symlinked path included)
    if in_root == text:
        return text  # a name, a relative path as given, or a path outside the root
    return Path(os.path.relpath(Path(root).resolve() / in_root, Path(model_dir).resolve())).as_posix()


def resolve_ref(model_dir: str | os.PathLike, ref: str | None) -> str | None:
    """A reference read from the record of ``model_dir``: ``./`` or ``../`` paths are resolved against
    the model folder, anything else (an absolute path, a name) is returned as written."""
    if not ref:
        return ref
    if ref.startswith(("./", "../")) or ref in (".", ".."):
        return str((Path(model_dir) / ref).resolve())
    return ref


# -- files ---------------------------------------------------------------------------------------------------
def read_model_record(model_dir: str | os.PathLike) -> ModelRecord | None:
    """The record of a model folder, or None when it has none (a plain Hugging Face checkpoint).

    Raises:
        ValueError: the file is too large, not JSON, or a field has the wrong type (one line naming it).
    """
    path = Path(model_dir) / RECORD_FILE
    if not path.is_file():
        return None
    data = read_json_file(path, max_bytes=MAX_RECORD_BYTES, what="model record")
    return ModelRecord.from_dict(data, source=str(path))


def record_of(model: str | os.PathLike | None) -> ModelRecord:
    """The record of ``model`` when it is a folder holding one, else the defaults (a bare checkpoint)."""
    if model is not None and Path(str(model)).is_dir():
        found = read_model_record(model)
        if found is not None:
            return found
    return ModelRecord()


def write_model_record(model_dir: str | os.PathLike, record: ModelRecord | Mapping[str, Any]) -> Path:
    """Write ``record`` as ``<model_dir>/defsentflow.json`` atomically."""
    rec = record if isinstance(record, ModelRecord) else ModelRecord.from_dict(record)
    if rec.entry_matrix:
        rec = dataclasses.replace(rec, entry_matrix=matrix_folder(rec.entry_matrix))
    final = Path(model_dir) / RECORD_FILE
    with atomic_path(final) as tmp:
        tmp.write_text(json.dumps(rec.to_dict(), indent=2, sort_keys=True, default=str), encoding="utf-8")
    return final


def steady_record(folder: str | os.PathLike) -> Any:
    """The folder's record as it names the model: without the training's wall time (``train_seconds``),
    which the same training run again changes. None when the folder holds no record; raises
    ValueError (one line naming the file) when it holds one that cannot be read."""
    path = Path(folder) / RECORD_FILE
    if not path.is_file():
        return None
    data = read_json_file(path, max_bytes=MAX_RECORD_BYTES, what="model record")
    return {k: v for k, v in data.items() if k != "train_seconds"} if isinstance(data, dict) else data
