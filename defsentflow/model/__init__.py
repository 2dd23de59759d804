"""The model folder's one owner: its record (``defsentflow.json``), its head (the sentence vector it
was trained to produce and the frozen space it was scored in, with the ICA map of that space) and its id.

Nothing else parses ``defsentflow.json``: training writes a record through
:func:`write_model_record`, every reader asks :func:`read_model_record` / :func:`record_of` or, for
the head, :func:`model_head`; the catalog files a model under the id :mod:`defsentflow.model.ids`
gives it.
"""

from __future__ import annotations

from defsentflow.model.head import ENTRY_ENCODINGS, ENTRY_POOLING, HEAD_DEFAULTS, Head, entry_encoding_for, model_head
from defsentflow.model.ica import IcaTransform, head_ica
from defsentflow.model.ids import BASE_PREFIX, base_model_id, named_model_id, run_alias, trained_model_id
from defsentflow.model.record import (
    FIELDS,
    MAX_RECORD_BYTES,
    RECORD_FILE,
    ModelRecord,
    matrix_folder,
    model_ref,
    read_model_record,
    record_of,
    resolve_ref,
    write_model_record,
)

__all__ = ["BASE_PREFIX", "ENTRY_ENCODINGS", "ENTRY_POOLING", "FIELDS", "HEAD_DEFAULTS", "MAX_RECORD_BYTES",
           "RECORD_FILE", "Head", "IcaTransform", "ModelRecord", "head_ica", "base_model_id", "entry_encoding_for", "matrix_folder", "model_head",
           "model_ref", "named_model_id", "read_model_record", "record_of", "resolve_ref", "run_alias",
           "trained_model_id", "write_model_record"]
