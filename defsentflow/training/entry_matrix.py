"""The DefSent+ entry matrix's one builder (its folder and reader: :mod:`defsentflow.model.entry_matrix`).

:func:`encode_entry_matrix` is the one builder: the sharded encoding of
:mod:`defsentflow.training.entry_shards` (bit-identical whatever the shard count), then the optional
ICA map, in memory; :func:`build_entry_matrix` is the pipeline's use of it, written atomically and
registered in the catalog under its content key.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from defsentflow.encoders import load_encoder
from defsentflow.encoders.loading import LoadedEncoder, model_content_hash, portable_model_name
from defsentflow.entryspace import entry_space_stats, plot_entry_space
from defsentflow.model.entry_matrix import META_FILE, EntryMatrix
from defsentflow.model.ica import IcaTransform
from defsentflow.model.record import model_ref, resolve_ref
from defsentflow.storage import Catalog, data_root, hash_config, hash_path, root_place
from defsentflow.training import entry_shards  # its builder is looked up at call time (tests replace it there)
from defsentflow.training.config import ENTRY_ENCODINGS, ENTRY_POOLING, validate_choice
from defsentflow.training.data import TrainingData
from defsentflow.training.keys import artifact_key, base_model_of
from defsentflow.training.pst_config import DefSentSection, PstSection
from defsentflow.training.pst_records import MatrixRef

__all__ = ["build_entry_matrix", "encode_entry_matrix", "matrix_ref"]


def matrix_ref(path: str | os.PathLike, key: str) -> MatrixRef:
    """The reference of the matrix in folder ``path`` (content key ``key``), from its ``meta.json``."""
    meta = json.loads((Path(path) / META_FILE).read_text())
    return MatrixRef(key=key, path=str(path), encoder=str(resolve_ref(path, meta.get("encoder"))),
                     encoder_id=str(meta.get("encoder_id")), encoding=str(meta["encoding"]), ica=bool(meta["ica"]),
                     n_entries=int(meta["n_entries"]), dim=int(meta["dim"]), stats=dict(meta.get("stats") or {}))


def encode_entry_matrix(encoder: LoadedEncoder | str | os.PathLike, definition_entries: Sequence[str],
                        definitions: Sequence[str], encoding: str = "amp", *, entries: Sequence[str] | None = None,
                        ica: bool = False, ica_fit: Mapping[str, Any] | None = None, batch_size: int = 128,
                        max_length: int = 64, autocast: str = "none", device: str = "auto", shards: int = 1,
                        fan_out: Any = None, cache_dir: str | os.PathLike | None = None) -> EntryMatrix:
    """The one builder: entry ``e``'s row is the mean over its definitions of the encoder's CLS
    (``ac``) or mean-pooled (``amp``) vector, FastICA-transformed when ``ica`` (``ica_fit``: the
    arguments of :meth:`IcaTransform.fit`), in memory.

    Args:
        encoder: a loaded encoder, a model folder or a bundled alias.
        definition_entries, definitions: the (entry, definition) pairs, one pair per definition.
        entries: the matrix's rows, in order (default: the entries in order of first appearance).
        shards, fan_out: the definitions are encoded in ``shards`` shards through ``fan_out``
            (bit-identical whatever the shard count).
        cache_dir: where the shards' vectors and token ids are kept (None: a temporary folder).

    Example:
        >>> em = encode_entry_matrix("minilm", ["dog", "dog", "cat"], ["a pet", "a hound", "a feline"])
        >>> em.entries, em.matrix.shape
        (['dog', 'cat'], (2, 384))
    """
    validate_choice("encoding", encoding, ENTRY_ENCODINGS)
    definition_entries, definitions = list(definition_entries), list(definitions)
    if len(definition_entries) != len(definitions):
        raise ValueError(f"{len(definition_entries)} entries but {len(definitions)} definitions")
    if not definitions:
        raise ValueError("no (entry, definition) pairs")
    enc = encoder if isinstance(encoder, LoadedEncoder) else load_encoder(encoder, device=device)
    with contextlib.ExitStack() as stack:
        cache = cache_dir if cache_dir is not None else stack.enter_context(tempfile.TemporaryDirectory())
        names, sums = entry_shards.build_entry_matrix_sharded(enc, definition_entries, definitions, encoding,
                                                              shards=max(1, int(shards)), fan_out=fan_out,
                                                              cache_dir=cache, batch_size=batch_size,
                                                              max_length=max_length, autocast=autocast, device=device)
    matrix = np.asarray(sums, dtype=np.float32)
    if entries is not None:
        row = {e: i for i, e in enumerate(names)}
        names, matrix = list(entries), matrix[[row[e] for e in entries]]
    transform = None
    if ica:  # fitted once here and saved with the matrix: evaluation and serving reuse this map, never refit it
        transform = IcaTransform.fit(matrix, **dict(ica_fit or {}))
        matrix = np.asarray(transform(matrix), dtype=np.float32)
    meta = {"encoding": encoding, "ica": ica, "encoder": portable_model_name(enc.path),
            "encoder_id": model_content_hash(enc.path), "max_length": max_length, "autocast": autocast,
            "n_entries": int(matrix.shape[0]), "dim": int(matrix.shape[1]), "pooling": ENTRY_POOLING[encoding]}
    return EntryMatrix(entries=list(names), matrix=matrix, meta=meta, ica=transform)


def build_entry_matrix(section: PstSection | DefSentSection, data: TrainingData, *, encoder: str, encoder_id: str,
                       encoding: str, ica: bool, step: int = 1, root: str | os.PathLike | None = None,
                       run_id: str | None = None, fan_out: Any = None) -> MatrixRef:
    """Build (or reuse) the frozen entry matrix of the training entries with ``encoder``.

    Row i is the mean over entry i's training definitions of the encoder's CLS (``ac``) or
    mean-pooled (``amp``) vector, FastICA-transformed when ``ica``. The definitions are encoded in
    shards through ``fan_out`` (as many as its ``shards`` attribute says, e.g. the Dask workers; one
    in this process otherwise): the matrix is bit-identical whatever the shard count.
    """
    ica_fit = [hash_config(section.ica_fit)] if ica else []  # plain matrices keep their keys
    key = artifact_key("pst_entry_matrix", encoder_id, data.train_hash, encoding, ica, section.max_length,
                       section.autocast, *ica_fit)
    cat = Catalog(root)
    found = cat.artifact(key)
    if found is not None:
        return matrix_ref(found["path"], key)
    home = data_root(root)
    f = section.ica_fit
    built = encode_entry_matrix(encoder, data.definition_entries, data.definitions, encoding, entries=data.entries,
                                ica=ica, ica_fit=dict(max_iter=f.max_iter, random_state=f.random_state, scale=f.scale,
                                                      standardize=f.standardize),
                                batch_size=section.entry_batch_size, max_length=section.max_length,
                                autocast=section.autocast, device=section.device,
                                shards=int(getattr(fan_out, "shards", 1) or 1), fan_out=fan_out,
                                cache_dir=root_place(home, "entry_shards"))
    matrix, transform = built.matrix, built.ica
    final = root_place(home, "entry_matrices", key)
    source = f"base {section.base_model}" if encoder_id == base_model_of(section)[1] else f"step {step - 1}'s best"
    title = f"PST step {step}: {encoding.upper()}{' + ICA' if ica else ''} entries by {source}"
    stats = {k: (float(v) if isinstance(v, np.floating | np.integer) else v)
             for k, v in dict(entry_space_stats(matrix)).items()}
    meta = {"encoding": encoding, "ica": ica, "encoder": model_ref(encoder, final, home), "encoder_id": encoder_id,
            "max_length": section.max_length, "autocast": section.autocast, "n_entries": int(matrix.shape[0]),
            "dim": int(matrix.shape[1]), "pooling": ENTRY_POOLING[encoding], "stats": stats}
    EntryMatrix(entries=list(data.entries), matrix=matrix, meta=meta, ica=transform).save(
        final, extra_files={"plot": lambda tmp: plot_entry_space(matrix, tmp / "entry_space.png", title)})
    ref = matrix_ref(final, key)
    cat.register_artifact(key, "entry_matrix", final, hash_path(final), name=f"pst-step{step}-{encoding}",
                          input_hashes={"encoder": encoder_id, "train": data.train_hash},
                          config={"encoding": encoding, "ica": ica, "max_length": section.max_length},
                          run_id=run_id, meta={k: v for k, v in meta.items() if k != "stats"})
    return ref
