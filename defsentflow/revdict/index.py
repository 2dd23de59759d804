"""Reverse-dictionary serving: a faiss inner-product index over entry embeddings.

The index is built once per (model, entry encoder, dictionary content, mode, settings) and kept as
a catalog artifact (``<data root>/revdict/<key>/``: ``index.faiss``, ``entries.parquet``,
``meta.json``). Any dictionary dataset can be indexed, so entries added later (a new dataset,
or a re-ingested one) are served without retraining: only the index is rebuilt, and definitions
already encoded come from the embedding cache. :meth:`RevdictIndex.add` extends an index with new
entries (or new definitions of known entries) by encoding only those; later look-ups of the same
(model, dictionary, mode) are served by the newest extension.

``mode="auto"`` serves the mode with the higher dev-split reverse-dictionary MRR measured for the model
(the catalog's ``revdict-dev`` metrics, written by the pipeline's evaluation); for a
model never evaluated, ``head`` when it was trained against an entry head, else ``cosine``.

Modes (see :mod:`defsentflow.evaluation.revdict`): ``cosine`` indexes L2-normalised entry means
built by the model itself and normalises the query; ``head`` indexes the entry means built by
the model's entry encoder (the frozen DefSent+ head space) and queries with the training-time
output (pooled, then the pooler).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.dictionary import tables
from defsentflow.dictionary.tables import dictionary_content_hash
from defsentflow.encoders import encode_texts, load_encoder, model_content_hash, resolve_model_path, validate_pooling
from defsentflow.encoders.finite import require_finite, require_search_scores
from defsentflow.encoders.loading import portable_model_name
from defsentflow.evaluation.revdict import candidate_set, entry_sums, headword_text
from defsentflow.model import ENTRY_POOLING, head_ica, model_head
from defsentflow.model.query import HeadQueryEncoder
from defsentflow.revdict.ann import INDEX_KINDS, make_index, set_search_breadth, tune_nprobe
from defsentflow.storage import (
    Catalog,
    atomic_dir,
    code_version,
    combine_hashes,
    data_root,
    hash_config,
    hash_path,
    write_parquet,
)
from defsentflow.storage.integrity import verify_artifact_files
from defsentflow.storage.paths import from_root, root_place, to_root

__all__ = ["RevdictIndex", "IndexMode", "build_revdict_index", "index_from_vectors", "measured_modes", "resolve_mode"]

IndexMode = Literal["auto", "head", "cosine", "hybrid"]
_MODES = ("head", "cosine", "hybrid")

TUNING_QUERIES = 1000  # definition vectors an approximate index's search breadth is tuned on

_ENTRIES_SCHEMA = pa.schema([pa.field("entry", pa.string(), nullable=False),
                             pa.field("n_definitions", pa.int32(), nullable=False)])


def resolve_mode(mode: str, entry_encoder: str | None, measured: dict[str, float] | None = None) -> str:
    """``auto``: the mode with the higher measured dev MRR (``measured``: mode -> MRR) when at least
    two modes were measured; otherwise ``head`` for models trained against an entry head (their
    head names the ``entry_encoder`` that built it), else ``cosine``."""
    if mode not in ("auto", *_MODES):
        raise ValueError(f"mode must be one of {('auto', *_MODES)}, got {mode!r}")
    if mode == "auto":
        can_head = bool(entry_encoder)
        scores = {m: v for m, v in (measured or {}).items() if m in _MODES and (m != "head" or can_head)}
        if len(scores) >= 2:  # a comparison needs two measured modes (PST's selection measures one)
            return max(sorted(scores), key=lambda m: scores[m])
        return "head" if can_head else "cosine"
    return mode


def measured_modes(model: str | os.PathLike, root: str | os.PathLike | None = None) -> dict[str, float]:
    """The newest **dev-split** reverse-dictionary MRR per mode recorded for ``model`` (by path or
    id): ``auto`` chooses with dev figures only; test-split figures are reported, never read here."""
    if not (data_root(root) / "catalog.duckdb").is_file():
        return {}
    path = str(model)
    try:
        path = str(Path(resolve_model_path(model)).resolve())
    except (OSError, ValueError):
        pass
    cat = Catalog(root)
    rows = cat.query(  # models.path is stored relative to the data root (Catalog.rel)
        "SELECT m.setting, arg_max(m.value, m.created_at) AS mrr FROM metrics AS m "
        "WHERE task_base(m.task) = 'revdict-dev' AND m.metric = 'mrr' AND m.model_id IN "
        "(SELECT model_id FROM models WHERE path = ? OR model_id = ?) GROUP BY m.setting", [cat.rel(path), str(model)])
    return {r["setting"]: float(r["mrr"]) for r in rows if r["setting"] in _MODES}


@dataclass(frozen=True)
class _Spec:
    model: str
    mode: str
    pooling: str
    use_pooler: bool
    entry_encoder: str
    entry_encoding: str
    ica: bool
    normalize: bool
    max_length: int
    headword: bool = False      # hybrid: each entry's vector also gets its headword's own vector


def _spec(model: str | os.PathLike, mode: str, pooling: str | None, max_length: int,
          root: str | os.PathLike | None = None) -> _Spec:
    model_path = portable_model_name(resolve_model_path(model))  # meta.json names the bundled model, not its venv
    head = model_head(resolve_model_path(model_path), pooling=pooling)
    mode = resolve_mode(mode, head.entry_encoder, measured_modes(model, root) if mode == "auto" else None)
    pooling = validate_pooling(head.pooling)
    if mode in ("cosine", "hybrid"):
        return _Spec(str(model_path), mode, pooling, False, str(model_path), "same", False, True, max_length,
                     headword=mode == "hybrid")
    return _Spec(str(model_path), mode, pooling, head.use_pooler, portable_model_name(head.entry_encoder or model_path),
                 head.entry_encoding, head.ica, head.normalize_logits, max_length)


def _index_key(spec: _Spec, dictionary_hash: str) -> str:
    fields = asdict(spec)
    fields.pop("model"), fields.pop("entry_encoder")
    return combine_hashes(["revdict_index", model_content_hash(spec.model), model_content_hash(spec.entry_encoder),
                           dictionary_hash, hash_config(fields), code_version()])


class RevdictIndex:
    """A loaded reverse-dictionary index.

    Example:
        >>> idx = build_revdict_index("storage/models/pst/abc", "sample")
        >>> idx.search(["a domesticated carnivorous mammal"], k=10)[0][:3]
        [('dog', 0.61), ('cat', 0.58), ...]
    """

    def __init__(self, path: str | os.PathLike):
        import faiss  # lazy: faiss loads only when a dense index is built or searched

        self.path = Path(path)

        verify_artifact_files(self.path)  # full hashes against its record, once per process
        self.meta: dict[str, Any] = json.loads((self.path / "meta.json").read_text())
        for k in ("model", "entry_encoder"):  # stored relative to the data root (<root>/revdict/<key>)
            self.meta[k] = from_root(self.path.resolve().parents[1], self.meta.get(k))
        self.index = faiss.read_index(str(self.path / "index.faiss"))
        if self.meta.get("breadth"):
            set_search_breadth(self.index, self.meta["breadth"])
        # an Arrow column, not a million Python strings: a hit's name is read when it is returned
        self._entry_column = pq.read_table(self.path / "entries.parquet", columns=["entry"]).column("entry")
        self._entries: list[str] | None = None
        self._encoder = None

    @property
    def entries(self) -> list[str]:
        """Every entry, in index order (materialised on first use)."""
        if self._entries is None:
            self._entries = self._entry_column.to_pylist()
        return self._entries

    def entry(self, j: int) -> str:
        """The entry of index row ``j``."""
        return self._entries[j] if self._entries is not None else self._entry_column[int(j)].as_py()

    def query_vectors(self, texts: Sequence[str], *, device: str = "auto") -> np.ndarray:
        """The query side: the pooled (cosine) or head (pooler) vectors of ``texts``."""
        m = self.meta
        if m["mode"] == "head":
            if self._encoder is None:  # loaded once: a server calls this for every batch
                self._encoder = HeadQueryEncoder(m["model"], m["pooling"], m["use_pooler"],
                                                 max_length=m["max_length"], device=device)
            vecs = np.asarray(self._encoder(list(texts)), dtype=np.float32)
        else:
            if self._encoder is None:
                self._encoder = load_encoder(m["model"], device=device)
            vecs = encode_texts(self._encoder, list(texts), pooling=m["pooling"], max_length=m["max_length"])
        if m["normalize"]:
            vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True).clip(min=1e-12)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def search_vectors(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """faiss top-``k``: (scores ``[Q, k]``, entry indices ``[Q, k]``)."""
        k = min(k, self.index.ntotal)
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def search(self, texts: Sequence[str], k: int = 10, *, device: str = "auto") -> list[list[tuple[str, float]]]:
        """Top-``k`` (entry, score) for each definition in ``texts``."""
        queries = self.query_vectors(texts, device=device)
        require_finite(queries, model=str(self.meta["model"]), what="query vectors")
        scores, idx = self.search_vectors(queries, k)
        require_search_scores(scores, idx, model=str(self.meta["model"]), normalized=bool(self.meta.get("normalize")),
                              k=min(k, self.index.ntotal))
        return [[(self.entry(j), float(s)) for s, j in zip(srow, irow) if j >= 0] for srow, irow in zip(scores, idx)]

    def add(self, table: pa.Table, *, batch_size: int = 128, device: str = "auto",
            root: str | os.PathLike | None = None) -> RevdictIndex:
        """A new index: this one plus ``table``'s (entry, definition) rows, encoding only those.

        New entries are appended; a known entry's vector becomes the mean over its old and new
        definitions. The model is not retrained. The result is registered as an extension of this
        index, so :func:`build_revdict_index` serves it for the same model, dictionary and mode.

        Raises:
            ValueError: the table lacks entry/definition columns or is empty. An index in the
                ICA-transformed head space maps new entries with the model's saved ICA (no refit).
        """
        if not (self.path / "means.npy").is_file():
            raise ValueError(f"{self.path} keeps no entry means (built before indexes kept them, commit 7201d42 of "
                             "2026-11-22): rebuild it to add entries")
        missing = [c for c in ("entry", "definition") if c not in table.column_names]
        if missing or table.num_rows == 0:
            raise ValueError(f"entries to add need entry and definition columns and at least one row "
                             f"(columns: {table.column_names}, rows: {table.num_rows})")
        new_entries = [str(e).strip() for e in table.column("entry").to_pylist()]
        new_defs = [str(d).strip() for d in table.column("definition").to_pylist()]
        bad = [i for i, (e, d) in enumerate(zip(new_entries, new_defs)) if not e or not d]
        if bad:
            raise ValueError(f"row {bad[0]} of the entries to add has an empty entry or definition")
        spec = _Spec(**{k: self.meta[k] for k in _Spec.__dataclass_fields__ if k in self.meta})
        vecs = _encode_definitions(spec, new_defs, batch_size=batch_size, device=device)
        means = np.load(self.path / "means.npy").astype(np.float64)
        counts = pq.read_table(self.path / "entries.parquet").column("n_definitions").to_numpy().astype(np.int64)
        entries = list(self.entries)
        position = {e: i for i, e in enumerate(entries)}
        sums = means * counts[:, None]
        extra_sums: list[np.ndarray] = []
        for e, v in zip(new_entries, vecs.astype(np.float64)):
            if e not in position:
                position[e] = len(entries)
                entries.append(e)
                extra_sums.append(np.zeros_like(v))
                counts = np.append(counts, 0)
            j = position[e]
            if j < len(sums):
                sums[j] += v
            else:
                extra_sums[j - len(sums)] += v
            counts[j] += 1
        if extra_sums:
            sums = np.vstack([sums, np.stack(extra_sums)])
        added_hash = dictionary_content_hash(table.select(["entry", "definition"]))
        key = combine_hashes(["revdict_index_add", self.meta["key"], added_hash])
        new_means = (sums / counts[:, None]).astype(np.float32)
        final = root_place(data_root(root), "revdict_indexes", key)
        meta = {**self.meta, "key": key, "extends": self.meta["key"], "added_hash": added_hash,
                "n_entries": len(entries), "n_added_definitions": len(new_defs)}
        words = _headword_vectors(spec, entries, batch_size=batch_size, device=device)
        _write_index(final, entries, new_means, counts, meta, spec.normalize, _ica_of(spec), words=words)
        cat = Catalog(root)
        cat.register_artifact(key, "revdict_index", final, hash_path(final), name=self.meta.get("name"),
                              input_hashes={"extends": self.meta["key"], "added": added_hash}, config=meta)
        return RevdictIndex(final)


def _encode_definitions(spec: _Spec, definitions: Sequence[str], *, batch_size: int, device: str) -> np.ndarray:
    """The entry-side vectors of ``definitions``: the model's pooling (cosine) or the entry encoder's
    CLS (AC) / mean (AMP) vectors (head); cached in the data root's embedding cache."""
    pool = spec.pooling if spec.mode != "head" else ENTRY_POOLING[spec.entry_encoding]
    enc = load_encoder(spec.entry_encoder, device=device)
    return encode_texts(enc, list(definitions), pooling=pool, batch_size=batch_size, max_length=spec.max_length,
                        cache=True, desc="indexing entries")


def _entry_matrix(spec: _Spec, table: pa.Table, *, batch_size: int,
                  device: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Entries, their mean definition vectors (before ICA and normalisation), definition counts and a
    seeded sample of definition vectors (the queries an approximate index is tuned on)."""
    data = candidate_set(table, split="test", candidates="all")
    vecs = _encode_definitions(spec, data.definitions, batch_size=batch_size, device=device)
    sums, counts = entry_sums(vecs, data.def_entry, len(data.entries))
    sample = np.random.default_rng(0).choice(len(vecs), size=min(len(vecs), TUNING_QUERIES), replace=False)
    return data.entries, (sums / counts[:, None]).astype(np.float32), counts, vecs[np.sort(sample)]


def _headword_vectors(spec: _Spec, entries: Sequence[str], *, batch_size: int, device: str) -> np.ndarray | None:
    """The pooled vectors of the headwords themselves (hybrid mode), else None."""
    if not spec.headword:
        return None

    enc = load_encoder(spec.model, device=device)
    return encode_texts(enc, [headword_text(e) for e in entries], pooling=spec.pooling, batch_size=batch_size,
                        max_length=spec.max_length, cache=True, desc="indexing headwords")


def _ica_of(spec: _Spec) -> Any:
    """The model's training-time ICA map (saved with its entry matrix), or None without ICA."""
    if not spec.ica:
        return None

    return head_ica(model_head(spec.model))


def _index_matrix(means: np.ndarray, transform: Any, normalize: bool, words: np.ndarray | None = None,
                  chunk: int = 65_536) -> np.ndarray:
    """The served vectors, float32, computed row block by row block in float64 (every step is per row,
    so the blocks change nothing; a million-row float64 copy would not fit beside the index)."""
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True).clip(min=1e-12)  # noqa: E731
    out: np.ndarray | None = None
    for start in range(0, len(means), chunk):
        block = np.asarray(means[start:start + chunk], dtype=np.float64)
        if transform is not None:  # the map fitted at training time: the served space is the trained one
            block = transform(block)
        if words is not None:
            block = unit(block) + unit(np.asarray(words[start:start + chunk], dtype=np.float64))
        if normalize:
            block = unit(block)
        if out is None:
            out = np.empty((len(means), block.shape[1]), dtype=np.float32)
        out[start:start + len(block)] = block
    return out if out is not None else np.zeros((0, means.shape[1]), dtype=np.float32)


def _write_index(final: Path, entries: list[str], means: np.ndarray, counts: np.ndarray, meta: dict[str, Any],
                 normalize: bool, transform: Any = None, words: np.ndarray | None = None,
                 probes: np.ndarray | None = None) -> None:
    """``index.faiss`` (inner product over the served vectors), ``entries.parquet``, ``means.npy``
    (the raw entry means, so entries can be added later) and ``meta.json``, atomically.

    ``meta["index_kind"]`` ``ivf``/``hnsw`` builds an approximate index whose search breadth is the
    smallest reaching recall@10 >= 0.995 against exact search on ``probes`` (definition vectors,
    mapped as the entries are); the breadth and recall go into ``meta.json``."""
    import faiss  # lazy: faiss loads only when a dense index is built or searched

    matrix = _index_matrix(means, transform, normalize, words)
    kind = meta.get("index_kind", "flat")
    with atomic_dir(final) as tmp:
        index = make_index(matrix, kind)
        if kind != "flat" and probes is not None and len(probes):
            queries = _index_matrix(probes, transform, normalize)
            breadth, recall = tune_nprobe(make_index(matrix, "flat"), index, queries, k=min(10, len(matrix)))
            meta = {**meta, "breadth": breadth, "tuned_recall_at_10": round(recall, 4), "tuning_queries": len(queries)}
        faiss.write_index(index, str(tmp / "index.faiss"))
        write_parquet(pa.table({"entry": entries, "n_definitions": np.asarray(counts).astype(np.int32)},
                               schema=_ENTRIES_SCHEMA), tmp / "entries.parquet")
        np.save(tmp / "means.npy", np.ascontiguousarray(means, dtype=np.float32))
        stored = {**meta, "dim": int(matrix.shape[1])}
        for k in ("model", "entry_encoder"):  # relative to the data root, so a copied root reads its own models
            stored[k] = to_root(final.resolve().parents[1], stored[k]) if stored.get(k) else stored.get(k)
        (tmp / "meta.json").write_text(json.dumps(stored, indent=2, sort_keys=True))


def _newest_extension(cat: Any, key: str) -> dict[str, Any] | None:
    """The newest index that extends ``key`` (through any chain of :meth:`RevdictIndex.add`), if any."""
    found = None
    for _ in range(1000):
        rows = cat.query("SELECT artifact_key, path FROM artifacts WHERE kind = 'revdict_index' "
                         "AND json_extract_string(input_hashes, '$.extends') = ? ORDER BY created_at DESC LIMIT 1", [key])
        if not rows or not Path(rows[0]["path"]).is_dir():
            return found
        found, key = rows[0], rows[0]["artifact_key"]
    return found


def build_revdict_index(model: str | os.PathLike, dictionary: str | pa.Table, *, mode: IndexMode = "auto",
                        pooling: str | None = None, max_length: int = 64, batch_size: int = 128,
                        device: str = "auto", root: str | os.PathLike | None = None,
                        rebuild: bool = False, index_kind: str = "flat") -> RevdictIndex:
    """Build (or reuse) the faiss index of ``dictionary``'s entries for ``model``.

    Args:
        model: model directory, Hugging Face id or ``minilm``.
        dictionary: dataset name/key, or a table with entry and definition (and split) columns.
        mode: ``head``, ``cosine``, ``hybrid`` (cosine entry vectors plus the headword's own vector)
            or ``auto`` (the mode with the best measured MRR for this model, else head when the model
            has an entry head, else cosine).
        root: data root (default ``$DEFSENTFLOW_HOME`` or ``./storage``).
        rebuild: ignore a cached index.
        index_kind: ``flat`` (exact), ``ivf`` or ``hnsw`` (approximate, tuned to recall@10 >= 0.99
            against exact search; :mod:`defsentflow.revdict.ann`).
    """
    table = tables.load_dictionary_table(dictionary, root=root)
    if "split" not in table.column_names:
        table = table.append_column("split", pa.array(["test"] * table.num_rows, pa.string()))
    spec = _spec(model, mode, pooling, max_length, root)
    dict_hash = tables.dictionary_content_hash(table)
    if index_kind not in INDEX_KINDS:
        raise ValueError(f"index kind must be one of {INDEX_KINDS}, got {index_kind!r}")
    key = _index_key(spec, dict_hash)
    if index_kind != "flat":  # flat indexes keep their keys

        key = combine_hashes([key, index_kind])
    cat = Catalog(root)
    found = None if rebuild else cat.artifact(key)
    if found is not None and Path(found["path"]).is_dir():
        newest = _newest_extension(cat, key)
        return RevdictIndex(newest["path"] if newest else found["path"])
    entries, means, counts, probes = _entry_matrix(spec, table, batch_size=batch_size, device=device)
    final = root_place(data_root(root), "revdict_indexes", key)
    name = dictionary if isinstance(dictionary, str) else None
    meta = {**spec.__dict__, "key": key, "name": name, "dictionary_hash": dict_hash, "n_entries": len(entries),
            **({"index_kind": index_kind} if index_kind != "flat" else {})}
    words = _headword_vectors(spec, entries, batch_size=batch_size, device=device)
    _write_index(final, entries, means, counts, meta, spec.normalize, _ica_of(spec), words, probes=probes)
    cat.register_artifact(key, "revdict_index", final, hash_path(final), name=name,
                          input_hashes={"dictionary": dict_hash}, config=meta)
    return RevdictIndex(final)


def index_from_vectors(model: str | os.PathLike, entries: Sequence[str], vectors: np.ndarray, *, name: str,
                       pooling: str = "mean", max_length: int = 64, index_kind: str = "flat",
                       probes: np.ndarray | None = None, root: str | os.PathLike | None = None) -> RevdictIndex:
    """A cosine-mode index over entry vectors computed elsewhere, served for ``model`` (which encodes
    the queries) like any index :func:`build_revdict_index` builds.

    For vectors made outside this package (a precomputed entry matrix; ``bench/scale.py``'s synthetic
    million-entry index). ``vectors`` may be memory-mapped: it is hashed and indexed in place.
    ``probes`` (query-side vectors) tune an approximate index's breadth as in a real build.

    Example:
        >>> idx = index_from_vectors("minilm", ["dog", "cat"], np.eye(2, 384, dtype=np.float32), name="pets")
    """
    if len(entries) != len(vectors) or not len(entries):
        raise ValueError(f"index_from_vectors: {len(entries)} entries for {len(vectors)} vectors")
    if index_kind not in INDEX_KINDS:
        raise ValueError(f"index kind must be one of {INDEX_KINDS}, got {index_kind!r}")
    spec = _spec(model, "cosine", pooling, max_length, root)
    digest = hashlib.blake2b(digest_size=16)
    for start in range(0, len(vectors), 65_536):
        digest.update(np.ascontiguousarray(vectors[start:start + 65_536], dtype=np.float32).tobytes())
    digest.update("\n".join(entries).encode("utf-8", "surrogateescape"))
    vec_hash = digest.hexdigest()
    key = combine_hashes([_index_key(spec, vec_hash), index_kind, "vectors"])
    final = root_place(data_root(root), "revdict_indexes", key)
    meta = {**spec.__dict__, "key": key, "name": name, "dictionary_hash": vec_hash, "n_entries": len(entries),
            **({"index_kind": index_kind} if index_kind != "flat" else {})}
    _write_index(final, list(entries), vectors, np.ones(len(entries), dtype=np.int32), meta, spec.normalize,
                 probes=probes)
    Catalog(root).register_artifact(key, "revdict_index", final, hash_path(final), name=name,
                                    input_hashes={"vectors": vec_hash}, config=meta)
    return RevdictIndex(final)

