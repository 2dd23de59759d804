"""The entry-matrix build split into shards: a plan, one pure call per shard, and a merge.

Every distinct definition is tokenised once (cached per tokenizer: :func:`token_ids`) and the texts are cut into the same length-sorted
batches as :func:`~defsentflow.encoders.encode_texts` makes; the shards are contiguous blocks of
those globally sorted batches, so each definition is encoded in exactly one shard, in the batch
it would have had in one process. A shard writes its vectors (float32, in batch order) to
``<cache>/<key>.npy``, keyed by the model's content hash, the pooling spec and the shard's token
ids, and is skipped when that file exists. The merge opens the shard files memory-mapped and sums
each entry's definition vectors in float32, chunk by chunk in pair order, into the one
``[entries, hidden]`` array it returns (written as a memory-mappable ``.npy`` when ``out`` is
given). The chunking does not depend on the number of shards, so the matrix is bit-identical
whatever the shard count or the executor.

The shards go through an injected ``fan_out(fn, calls) -> results`` (results in submission
order; default a plain loop): a Dask or Prefect runner maps :func:`encode_entry_shard` over the
specs on its workers.

Example:
    >>> em = build_entry_matrix_sharded("minilm", ["dog", "dog", "cat"], ["a pet", "a hound", "a feline"],
    ...                                 shards=2, cache_dir=root_place(root, "entry_shards"))
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from defsentflow.dictionary.variants import tokenizer_id
from defsentflow.encoders.encoding import (
    DEFAULT_MAX_TOKENS,
    encode_batch,
    inference_model,
    pad_batch,
    token_budget_batches,
    tokenize_sorted,
)
from defsentflow.encoders.loading import Autocast, LoadedEncoder, autocast_context, load_encoder, model_content_hash
from defsentflow.fanout import FanOut, sequential
from defsentflow.storage.hashing import combine_hashes, hash_bytes, hash_text
from defsentflow.training.config import ENTRY_POOLING

__all__ = ["EntryShardSpec", "plan_entry_shards", "token_ids", "encode_entry_shard", "sum_entry_vectors",
           "build_entry_matrix_sharded", "plain_fan_out"]

# Pairs summed per chunk in the merge: fixed, so the float32 sums never depend on the sharding.
MERGE_CHUNK = 65_536


def plain_fan_out(fn: Callable[..., Any], calls: list) -> list:
    """The default executor: one call after another, results in order (``defsentflow.fanout.sequential``)."""
    return sequential(fn, calls)


@dataclass(frozen=True)
class EntryShardSpec:
    """Everything one shard needs (picklable; no catalog, no open model): its batches' token ids."""

    model: str
    model_hash: str
    pooling: str
    max_length: int
    autocast: str
    device: str
    pad_id: int
    batches: tuple[tuple[tuple[int, ...], ...], ...]
    out: str  # the shard's vector file

    @property
    def rows(self) -> int:
        return sum(len(b) for b in self.batches)


def _shard_key(model_hash: str, pooling: str, max_length: int, autocast: str, batches: Sequence[Sequence[Sequence[int]]]) -> str:
    flat = np.fromiter((t for b in batches for s in b for t in (*s, -1)), dtype=np.int64)
    sizes = np.fromiter((len(b) for b in batches), dtype=np.int64)
    return combine_hashes(["entry-shard", model_hash, hash_text(f"{pooling}-L{max_length}-{autocast}"),
                           hash_bytes(memoryview(flat)), hash_bytes(memoryview(sizes))])


def plan_entry_shards(encoder: LoadedEncoder, definitions: Sequence[str], *, shards: int, pooling: str,
                      max_length: int = 64, batch_size: int = 128, autocast: Autocast = "none",
                      cache_dir: str | os.PathLike, max_tokens: int | None = None) -> tuple[list[str], np.ndarray, list[EntryShardSpec]]:
    """``(distinct texts, row of each text in the shards' concatenated output, shard specs)``.

    Texts are de-duplicated and sorted by length as :func:`encode_texts` does; the batches are
    split into ``shards`` contiguous blocks of nearly equal text counts (fewer if there are fewer
    batches).
    """
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    unique = np.unique(np.array(list(definitions), dtype=object)).tolist()
    ids = token_ids(encoder, unique, max_length, cache_dir)
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    order = np.argsort(-lengths, kind="stable")  # longest first, as tokenize_sorted orders them
    batches = token_budget_batches(lengths, order, batch_size, max_tokens or max(DEFAULT_MAX_TOKENS, batch_size * 16))
    ends = np.cumsum([len(b) for b in batches])
    # a block ends at the first batch boundary at or past each 1/shards of the texts
    cuts = sorted({int(np.searchsorted(ends, len(unique) * k / shards)) + 1 for k in range(1, shards)} | {len(batches)})
    row_of_text = np.empty(len(unique), dtype=np.int64)
    row_of_text[np.concatenate(batches)] = np.arange(len(unique))
    model_hash = model_content_hash(encoder.path)
    pad_id = encoder.tokenizer.pad_token_id if encoder.tokenizer.pad_token_id is not None else 0
    specs, start = [], 0
    for stop in cuts:
        if stop <= start:
            continue
        block = tuple(tuple(tuple(ids[i]) for i in b) for b in batches[start:stop])
        key = _shard_key(model_hash, pooling, max_length, autocast, block)
        specs.append(EntryShardSpec(encoder.path, model_hash, pooling, max_length, autocast, str(encoder.device), pad_id,
                                    block, str(Path(cache_dir) / f"{key}.npy")))
        start = stop
    return unique, row_of_text, specs


def token_ids(encoder: LoadedEncoder, texts: list[str], max_length: int, cache_dir: str | os.PathLike) -> list[list[int]]:
    """Token ids of ``texts`` (special tokens added, truncated), cached in ``cache_dir`` per tokenizer:
    keyed by the hash of the tokenizer's files, ``max_length`` and the texts, so every PST step's
    encoder (the same tokenizer) reuses the first step's tokenization of a dictionary."""
    import pyarrow as pa  # lazy: pyarrow loads only where it is used

    key = combine_hashes(["tokens", tokenizer_id(encoder.path) or "", str(max_length), hash_text("\x1e".join(texts))])
    path = Path(cache_dir) / f"tokens-{key}.arrow"
    if path.is_file():
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_file(source).read_all().column("ids").to_pylist()
    ids, _ = tokenize_sorted(encoder.tokenizer, texts, max_length)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    table = pa.table({"ids": pa.array(ids, pa.list_(pa.int32()))})
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)
    return ids


_LOADED: dict[tuple[str, str, str], LoadedEncoder] = {}


def _encoder_for(spec: EntryShardSpec) -> LoadedEncoder:
    key = (spec.model, spec.model_hash, spec.device)
    if key not in _LOADED:  # one model per worker process, whatever the number of shards it runs
        _LOADED.clear()
        _LOADED[key] = load_encoder(spec.model, device=spec.device)
    return _LOADED[key]


def encode_entry_shard(spec: EntryShardSpec) -> str:
    """Encode one shard's batches into ``spec.out`` (float32 ``[rows, hidden]``); a file already
    there (same content key) is returned as is. Written to a temporary name, then renamed."""
    out = Path(spec.out)
    if out.is_file():
        return str(out)
    enc = _encoder_for(spec)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    vectors = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(spec.rows, enc.hidden_size))
    was_training = enc.model.training
    enc.model.eval()
    cpu_bf16 = spec.autocast == "bf16" and enc.device.type == "cpu"
    context = contextlib.nullcontext() if cpu_bf16 else autocast_context(enc.device, spec.autocast)  # type: ignore[arg-type]
    row = 0
    with torch.inference_mode(), context:
        model = inference_model(enc.model, enc.device, spec.autocast)  # type: ignore[arg-type]
        for seqs in spec.batches:
            vec = encode_batch(enc, pad_batch(seqs, spec.pad_id, enc.device), spec.pooling, model=model)
            vectors[row:row + len(seqs)] = vec.float().cpu().numpy()
            row += len(seqs)
    enc.model.train(was_training)
    vectors.flush()
    del vectors
    os.replace(tmp, out)
    return str(out)


def sum_entry_vectors(entries: Sequence[str], vector_rows: np.ndarray, read_rows: Callable[[np.ndarray], np.ndarray],
                      hidden: int, *, out: str | os.PathLike | None = None) -> tuple[list[str], np.ndarray]:
    """Per-entry means, summed in float32 chunk by chunk in pair order (entries in first-appearance order).

    ``vector_rows[i]`` is the row of pair ``i``'s vector and ``read_rows(rows)`` returns those rows;
    the only ``[entries, hidden]`` array is the result (a memory-mapped ``.npy`` at ``out`` if given).
    """
    codes_of: dict[str, int] = {}
    codes = np.fromiter((codes_of.setdefault(e, len(codes_of)) for e in entries), dtype=np.int64, count=len(entries))
    n = len(codes_of)
    if out is not None:
        sums = np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=(n, hidden))
        sums[:] = 0
    else:
        sums = np.zeros((n, hidden), dtype=np.float32)
    for start in range(0, len(codes), MERGE_CHUNK):
        c = codes[start:start + MERGE_CHUNK]
        order = np.argsort(c, kind="stable")
        c_sorted = c[order]
        vecs = np.ascontiguousarray(read_rows(vector_rows[start:start + MERGE_CHUNK][order]), dtype=np.float32)
        heads = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
        sums[c_sorted[heads]] += np.add.reduceat(vecs, heads, axis=0)
    counts = np.bincount(codes, minlength=n).astype(np.float32)
    sums /= counts[:, None]
    return list(codes_of), sums


def build_entry_matrix_sharded(encoder: LoadedEncoder | str | os.PathLike, entries: Sequence[str],
                               definitions: Sequence[str], encoding: str = "amp", *, shards: int = 1,
                               fan_out: FanOut | None = None, cache_dir: str | os.PathLike,
                               batch_size: int = 128, max_length: int = 64, autocast: Autocast = "none",
                               device: str = "auto", out: str | os.PathLike | None = None) -> tuple[list[str], np.ndarray]:
    """The DefSent+ entry matrix ``(entries, matrix)`` built in ``shards`` shards through ``fan_out``.

    Bit-identical for every ``shards`` and executor (same model, device and threads per shard).
    """
    if encoding not in ENTRY_POOLING:
        raise ValueError(f"encoding must be one of {tuple(ENTRY_POOLING)}, got {encoding!r}")
    entries, definitions = list(entries), list(definitions)
    if len(entries) != len(definitions) or not entries:
        raise ValueError(f"{len(entries)} entries and {len(definitions)} definitions: need as many, at least one")
    enc = encoder if isinstance(encoder, LoadedEncoder) else load_encoder(encoder, device=device)
    unique, row_of_text, specs = plan_entry_shards(enc, definitions, shards=shards, pooling=ENTRY_POOLING[encoding],
                                                   max_length=max_length, batch_size=batch_size, autocast=autocast,
                                                   cache_dir=cache_dir)
    if isinstance(encoder, LoadedEncoder):  # the caller's model serves the in-process shards
        _LOADED.clear()
        _LOADED[(enc.path, specs[0].model_hash, str(enc.device))] = enc
    paths = (fan_out or plain_fan_out)(encode_entry_shard, [(spec,) for spec in specs])  # calls: argument tuples
    parts = [np.load(p, mmap_mode="r") for p in paths]
    offsets = np.cumsum([0] + [len(p) for p in parts])

    def read_rows(rows: np.ndarray) -> np.ndarray:
        result = np.empty((len(rows), enc.hidden_size), dtype=np.float32)
        which = np.searchsorted(offsets, rows, side="right") - 1
        for k, part in enumerate(parts):
            sel = np.flatnonzero(which == k)
            if len(sel):
                result[sel] = part[rows[sel] - offsets[k]]
        return result

    index = {t: i for i, t in enumerate(unique)}
    vector_rows = row_of_text[np.fromiter((index[d] for d in definitions), dtype=np.int64, count=len(definitions))]
    return sum_entry_vectors(entries, vector_rows, read_rows, enc.hidden_size, out=out)
