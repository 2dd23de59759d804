"""DefSent+ entry embeddings in memory: one vector per dictionary entry, whatever its tokenisation.

``entry(e)`` is the mean over ``e``'s definitions of ``pooling(encoder([CLS] definition [SEP]))``,
with CLS pooling (AC, "average CLS") or mean pooling (AMP, "average mean pooling"). Definitions
are encoded once each (de-duplicated, length-sorted, padded per batch, through the sharded
builder the pipeline uses), then the per-entry means are a scatter-add; the research code instead
ran one forward pass per entry with its definitions padded to the entry's longest, which is many
times slower. The matrix a run trains against is a catalog artifact:
:mod:`defsentflow.training.entry_matrix`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence

import numpy as np

from defsentflow.encoders.loading import Autocast, LoadedEncoder, load_encoder, model_content_hash
from defsentflow.training.config import ENTRY_ENCODINGS, ENTRY_POOLING, EntryEncoding, validate_choice
from defsentflow.training.entry_matrix import EntryMatrix
from defsentflow.training.entry_shards import FanOut, build_entry_matrix_sharded, sum_entry_vectors
from defsentflow.training.ica import IcaTransform

__all__ = ["build_entry_embeddings", "entry_means"]


def entry_means(entries: Sequence[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Mean of ``vectors`` per entry, summed in float32; entries in order of first appearance."""
    vectors = np.asarray(vectors)
    return sum_entry_vectors(entries, np.arange(len(entries)), lambda rows: vectors[rows], vectors.shape[1])


def build_entry_embeddings(encoder: LoadedEncoder | str | os.PathLike, entries: Sequence[str],
                           definitions: Sequence[str], encoding: EntryEncoding = "amp", *, batch_size: int = 128,
                           max_length: int = 64, autocast: Autocast = "none", cache_dir: str | os.PathLike | None = None,
                           ica: bool = False, device: str = "auto", shards: int = 1,
                           fan_out: FanOut | None = None) -> EntryMatrix:
    """Build the DefSent+ entry matrix from (entry, definition) pairs, in memory.

    The pipeline's builder (:func:`~defsentflow.training.entry_matrix.build_entry_matrix`) without the
    catalog: the same sharded encoding (:func:`~defsentflow.training.entry_shards.build_entry_matrix_sharded`,
    bit-identical whatever ``shards``), entries in order of first appearance.

    Args:
        encoder: a loaded encoder, a model directory or a bundled alias.
        entries: the entry of each pair (an entry appears once per definition).
        definitions: the definition of each pair.
        encoding: ``ac`` (average CLS) or ``amp`` (average mean pooling).
        cache_dir: where the shards' vectors and token ids are kept (None: a temporary folder).
        ica: apply :func:`~defsentflow.training.ica.ica_transform` (standardised FastICA,
            max_iter=1000, random_state=42, x100).
    """
    validate_choice("encoding", encoding, ENTRY_ENCODINGS)
    entries, definitions = list(entries), list(definitions)
    if len(entries) != len(definitions):
        raise ValueError(f"{len(entries)} entries but {len(definitions)} definitions")
    if not entries:
        raise ValueError("no (entry, definition) pairs")
    enc = encoder if isinstance(encoder, LoadedEncoder) else load_encoder(encoder, device=device)
    with contextlib.ExitStack() as stack:
        cache = cache_dir if cache_dir is not None else stack.enter_context(tempfile.TemporaryDirectory())
        names, matrix = build_entry_matrix_sharded(enc, entries, definitions, encoding, shards=shards, fan_out=fan_out,
                                                   cache_dir=cache, batch_size=batch_size, max_length=max_length,
                                                   autocast=autocast, device=device)
    transform = None
    if ica:
        transform = IcaTransform.fit(matrix)
        matrix = transform(matrix).astype(np.float32)
    meta = {"encoding": encoding, "ica": ica, "encoder": str(enc.path), "encoder_id": model_content_hash(enc.path),
            "max_length": max_length, "autocast": autocast, "n_pairs": len(entries), "n_entries": len(names),
            "dim": int(matrix.shape[1]), "pooling": ENTRY_POOLING[encoding]}
    return EntryMatrix(entries=names, matrix=np.asarray(matrix, dtype=np.float32), meta=meta, ica=transform)
