"""The head of a model folder: the sentence vector its training optimised, and the frozen space it scored it in.

One function, :func:`model_head`, answers for every reader (training continuing a model, the
reverse dictionary and word prediction, the served index, ``encode`` and ``export``): the folder's
record says what the model was trained with; what the record does not say comes from one table,
:data:`HEAD_DEFAULTS`. A model without a record (a hub checkpoint, ``minilm``, PST's step 0) is
read as a bare encoder: mean pooling, no pooler (a sentence-transformers pipeline never runs it, and
the checkpoint's pooler was not trained for sentence vectors), its own entries encoded as its
pooling encodes them (AMP for mean pooling, AC for CLS).

Example:
    >>> head = model_head("storage/models/pst/<key>")
    >>> head.pooling, head.use_pooler, head.entry_encoding, head.entry_matrix
    ('mean', False, 'amp', PosixPath('.../pst/entry_matrices/<key>'))
    >>> model_head("minilm", pooling="cls").entry_encoding
    'ac'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from defsentflow.model.record import ModelRecord, record_of

__all__ = ["ENTRY_ENCODINGS", "ENTRY_POOLING", "HEAD_DEFAULTS", "Head", "entry_encoding_for", "model_head"]

ENTRY_POOLING: dict[str, str] = {"ac": "cls", "amp": "mean"}
"""The pooling each entry encoding averages: AC, the CLS vector; AMP, mean pooling."""
ENTRY_ENCODINGS: tuple[str, ...] = tuple(ENTRY_POOLING)

HEAD_DEFAULTS: dict[str, Any] = {
    "pooling": "mean",            # the sentence vector's pooling
    "use_pooler": False,          # the pooled vector itself (a bare encoder's sentence vector)
    "pooler_activation": None,    # None: the backbone family's (model.adapters), for a pooler it never trained
    "ica": False,                 # entry space not ICA-transformed
    "normalize_logits": False,    # dot products, not cosines, against the entry space
    "max_length": None,           # None: the evaluation's or the tokenizer's
    "normalize": None,            # None: as the sentence-transformers modules of its base model (or its own) end
}
"""What a record does not say, said once. ``entry_encoding`` has no fixed default: it follows the
pooling (:func:`entry_encoding_for`)."""


def entry_encoding_for(pooling: str) -> str:
    """The entry encoding a pooling builds its own entries with: AC for CLS pooling, AMP otherwise."""
    return "ac" if pooling == "cls" else "amp"


@dataclass(frozen=True)
class Head:
    """How a model's sentence vectors and its frozen entry space are computed.

    ``entry_encoder`` is the model that built the entry space (resolved: a folder or the name it was
    given; None: the model itself); ``entry_matrix`` the folder of the matrix it trained against
    (None: not trained against one); ``decoder`` DefSent's word-prediction layer (``mlm_head``,
    ``input_embeddings``) or ``entry_matrix``; ``base_model`` the model it started from (resolved).
    """

    pooling: str
    use_pooler: bool
    pooler_activation: str | None
    entry_encoding: str
    entry_encoder: str | None
    entry_matrix: Path | None
    ica: bool
    normalize_logits: bool
    max_length: int | None
    normalize: bool | None
    decoder: str | None
    base_model: str | None
    trained: bool               # the folder keeps a record (a model trained or exported here)

    @property
    def entry_pooling(self) -> str:
        """The pooling whose vectors the entry space averages."""
        return ENTRY_POOLING[self.entry_encoding]


def _pick(value: Any, recorded: Any, name: str) -> Any:
    if value is not None:
        return value
    return recorded if recorded is not None else HEAD_DEFAULTS[name]


def model_head(model: str | os.PathLike, *, pooling: str | None = None, use_pooler: bool | None = None,
               entry_encoding: str | None = None, record: ModelRecord | None = None) -> Head:
    """The head of ``model`` (a folder, or a name: a bare checkpoint), what the caller sets overriding
    the record, what neither says from :data:`HEAD_DEFAULTS`.

    Args:
        model: the model folder (resolved), or a hub id / bundled name.
        pooling, use_pooler, entry_encoding: the caller's choice (an evaluation's pooling, ...).
        record: the folder's record when the caller has read it already.
    """
    path = Path(str(model))
    rec = record if record is not None else record_of(model)
    trained = record is not None or (path.is_dir() and (path / "defsentflow.json").is_file())
    pooling = _pick(pooling, rec.pooling, "pooling")
    encoding = entry_encoding or rec.entry_encoding or entry_encoding_for(pooling)
    if encoding not in ENTRY_POOLING:
        raise ValueError(f"entry_encoding must be one of {ENTRY_ENCODINGS}, got {encoding!r}")
    folder = path if path.is_dir() else None
    return Head(
        pooling=pooling, use_pooler=bool(_pick(use_pooler, rec.use_pooler, "use_pooler")),
        pooler_activation=_pick(None, rec.pooler_activation, "pooler_activation"), entry_encoding=encoding,
        entry_encoder=rec.entry_encoder_path(folder) if folder is not None else rec.entry_encoder,
        entry_matrix=rec.entry_matrix_dir(folder) if folder is not None else None,
        ica=bool(_pick(None, rec.ica or None, "ica")),
        normalize_logits=bool(_pick(None, rec.normalize_logits, "normalize_logits")),
        max_length=_pick(None, rec.max_seq_length, "max_length"), normalize=_pick(None, rec.normalize, "normalize"),
        decoder=rec.decoder, base_model=rec.base_model_path(folder) if folder is not None else rec.base_model,
        trained=trained)
