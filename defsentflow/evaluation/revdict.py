"""Reverse dictionary (DefSent's word-prediction experiment): rank entries for a definition.

For each query definition of a split, every candidate entry is scored and the rank of the
definition's own entry gives MRR and top-1/3/10 accuracy. Splits are by entry, so test entries
were never trained on.

Leakage-free: an entry's vector is the mean of its definitions' vectors, and a query definition
never contributes to the vector of its own entry. Instead of re-encoding per query, entry *sums*
are computed once and the query's own entry is scored against ``(sum - v_query) / (n - 1)``;
entries with a single definition therefore cannot be queries.

Two modes are reported for every model by default, a third on request:

* ``head``: the training-time output (pooled, then the pooler when the model was trained with
  it) against the frozen entry space, i.e. entry vectors built by the model's *entry encoder*
  (the encoder that built its training head: the base model for PST step 1) with the entry
  encoding (AC: CLS, AMP: mean pooling), ICA-transformed when the head was;
* ``cosine``: the pooled query against entry vectors built by the same encoder with the same
  pooling, both L2-normalised;
* ``hybrid``: as ``cosine``, but an entry's vector is the sum of its (unit) definition mean and
  the (unit) pooled vector of the headword itself (underscores read as spaces). The headword is
  what a candidate *is*, so this uses no held-out text; it helps most where an entry's other
  definitions are other senses of the word.

Two query protocols:

* ``unseen`` (the default, task ``revdict`` / ``revdict-<split>``): a query is a definition whose
  text (whitespace-normalised as for de-duplication, and case-folded) occurs in no definition the
  model was trained on, in any split and under any entry. A synset's gloss is shared by all its
  lemmas, so with a split by entry the same gloss can be trained under one lemma and queried under
  another; those queries are excluded and counted (``n_excluded``).
* ``multi-definition`` (task ``revdict-multidef`` / ``revdict-<split>-multidef``): every definition
  of the split whose entry has at least two definitions (on OEWN test: 8,433 of 18,768 definitions),
  seen in training or not. Neither paper evaluates a reverse dictionary this way (DefSent's Table 2
  is word prediction over every test definition, :mod:`defsentflow.evaluation.wordpred`'s
  ``all-definitions``; DefSent+ leaves the reverse dictionary to future work, its Sec. 7).

``all-definitions`` is word prediction's protocol only: leave-one-out needs a second definition.

Figures: ``mrr`` over the full ranking, ``mrr@10`` as DefSent's reference ``get_mrr`` (def2word.py)
computes it (1/rank for a rank within the top 10, else 0), and top-1/3/10 accuracy.

Ties are ranked optimistically: rank = 1 + the number of candidates scoring strictly higher.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pyarrow as pa

from defsentflow.config_tools import CandidateSet, RevdictMode, RevdictProtocol
from defsentflow.dictionary import tables
from defsentflow.dictionary.validate import normalize_text
from defsentflow.encoders import encode_texts, load_encoder, validate_pooling
from defsentflow.encoders.finite import NonFiniteError, require_finite
from defsentflow.encoders.loading import resolve_model_path
from defsentflow.encoders.model_record import resolved_record
from defsentflow.storage.hashing import hash_text
from defsentflow.training.entry_matrix import EntryMatrix
from defsentflow.training.heads import sentence_head_vectors
from defsentflow.training.ica import IcaTransform

__all__ = [
    "CandidateSet",
    "chance_mrr",
    "Protocol",
    "RevdictMode",
    "RevdictQueries",
    "entry_sums",
    "evaluate_revdict_runs",
    "normalize_definition",
    "trained_texts",
    "headword_text",
    "evaluate_revdict",
    "model_meta",
    "prepare_queries",
    "rank_metrics",
    "revdict_metric_rows",
    "revdict_ranks",
    "revdict_task",
    "load_ica",
]

Protocol = RevdictProtocol
PROTOCOLS: tuple[str, ...] = get_args(Protocol)
REVDICT_PROTOCOLS: tuple[str, ...] = ("unseen", "multi-definition")
PROTOCOL_SUFFIX: dict[str, str] = {"unseen": "", "all-definitions": "-alldefs", "multi-definition": "-multidef"}
ALL_MODES: tuple[str, ...] = get_args(RevdictMode)
MODES: tuple[str, ...] = ("head", "cosine")  # the default
TOP_K: tuple[int, ...] = (1, 3, 10)


# -- the ranking core (pure numpy) --------------------------------------------------------------
def entry_sums(def_vecs: np.ndarray, def_entry: np.ndarray, n_entries: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-entry sums of definition vectors ``[n_entries, H]`` (float64) and definition counts."""
    from scipy.sparse import csr_matrix  # lazy: scipy loads only where it is used

    n_defs = len(def_entry)
    assign = csr_matrix((np.ones(n_defs), (def_entry, np.arange(n_defs))), shape=(n_entries, n_defs))
    sums = np.asarray(assign @ def_vecs.astype(np.float64))
    counts = np.bincount(def_entry, minlength=n_entries)
    return sums, counts


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True).clip(min=1e-12)


def headword_text(entry: str) -> str:
    """The text encoded for an entry's own vector (``hybrid`` mode): underscores read as spaces."""
    return entry.replace("_", " ")


def revdict_ranks(query_vecs: np.ndarray, query_rows: np.ndarray, def_vecs: np.ndarray, def_entry: np.ndarray,
                  n_entries: int, *, cosine: bool, transform: Callable[[np.ndarray], np.ndarray] | None = None,
                  entry_vecs: np.ndarray | None = None, chunk: int = 512) -> np.ndarray:
    """Rank of each query's own entry among all entries, leave-one-out.

    Args:
        query_vecs: ``[Q, H']`` query vectors (the model's output for each query definition).
        query_rows: ``[Q]`` the query's own row in ``def_vecs`` (the same definition, encoded by the
            entry encoder); its entry is ``def_entry[query_rows]`` and must have >= 2 definitions.
        def_vecs: ``[D, H]`` entry-encoder vectors of every definition of every candidate entry.
        def_entry: ``[D]`` candidate-entry index of each definition row.
        cosine: L2-normalise queries and entry vectors (after ``transform``).
        transform: an affine map applied to entry mean vectors (ICA), or None.
        entry_vecs: ``[n_entries, H]`` vectors of the entries themselves (``hybrid``): each entry's
            vector becomes unit(mean) + unit(entry vector); needs ``cosine``.

    Returns:
        ``[Q]`` int64 ranks, 1 = the own entry scored highest.
    """
    for what, vecs in (("query", query_vecs), ("definition", def_vecs), ("entry", entry_vecs)):
        if vecs is not None and not np.isfinite(vecs).all():  # NaN scores would still give finite ranks
            raise NonFiniteError(f"reverse dictionary: finite-value check failed: the {what} vectors hold NaN or "
                                 "infinity; the model files may be corrupt (`defsentflow verify`)")
    query_rows = np.asarray(query_rows, dtype=np.int64)
    def_entry = np.asarray(def_entry, dtype=np.int64)
    sums, counts = entry_sums(def_vecs, def_entry, n_entries)
    own = def_entry[query_rows]
    if np.any(counts[own] < 2):
        raise ValueError("a query's entry has a single definition: leave-one-out is undefined for it")
    means = sums / counts[:, None]
    loo = (sums[own] - def_vecs[query_rows].astype(np.float64)) / (counts[own] - 1)[:, None]
    if transform is not None:
        means, loo = transform(means), transform(loo)
    q = query_vecs.astype(np.float64)
    if cosine:
        means, loo, q = _unit(means), _unit(loo), _unit(q)
    if entry_vecs is not None:
        if not cosine:
            raise ValueError("entry_vecs (hybrid mode) needs cosine=True")
        words = _unit(np.asarray(entry_vecs, dtype=np.float64))
        means, loo = _unit(means + words), _unit(loo + words[own])
    ranks = np.empty(len(q), dtype=np.int64)
    for start in range(0, len(q), chunk):
        sl = slice(start, start + chunk)
        scores = q[sl] @ means.T
        own_score = np.einsum("ij,ij->i", q[sl], loo[sl])
        scores[np.arange(scores.shape[0]), own[sl]] = own_score
        ranks[sl] = 1 + (scores > own_score[:, None]).sum(axis=1)
    return ranks


def chance_mrr(n_candidates: int, at: int | None = None) -> float:
    """The expected MRR of a uniformly random ranking of ``n_candidates``: H_N / N (``at=10``: MRR@10,
    H_min(10, N) / N)."""
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    top = n_candidates if at is None else min(at, n_candidates)
    return sum(1.0 / k for k in range(1, top + 1)) / n_candidates


def rank_metrics(ranks: np.ndarray) -> dict[str, float]:
    """Figures (fractions in [0, 1]) from 1-based ranks: ``mrr`` over the full ranking, ``mrr@10``
    (a rank above 10 counts 0: DefSent's reference ``get_mrr`` sums 1/rank over the top-10 list
    and divides by every query; its tables print it x 100) and top-k accuracy."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size == 0:
        return {"mrr": float("nan"), "mrr@10": float("nan"), **{f"top{k}": float("nan") for k in TOP_K}}
    recip = 1.0 / ranks
    return {"mrr": float(np.mean(recip)), "mrr@10": float(np.mean(np.where(ranks <= 10, recip, 0.0))),
            **{f"top{k}": float(np.mean(ranks <= k)) for k in TOP_K}}


# -- data -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RevdictQueries:
    """Candidate entries, their definitions and the chosen query rows."""

    entries: list[str]             # candidate entries, sorted
    definitions: list[str]         # every definition of every candidate entry
    def_entry: np.ndarray          # [D] index into entries
    query_rows: np.ndarray         # [Q] rows of definitions used as queries
    split: str
    candidates: str
    n_excluded: int = 0            # eligible queries dropped because the model trained on their text

    @property
    def query_texts(self) -> list[str]:
        return [self.definitions[i] for i in self.query_rows]


def query_order_key(entry: str, definition: str) -> str:
    return hash_text(f"{entry}\x1f{definition}")


def normalize_definition(text: str) -> str:
    """A definition as the ``unseen`` protocol compares it: de-duplication's whitespace
    normalisation, then case-folded (stricter than de-duplication: more queries count as seen)."""
    return normalize_text(text).casefold()


def trained_texts(table: pa.Table, train_splits: Sequence[str] = ("train",)) -> set[str]:
    """Normalised texts of every definition in ``train_splits``, under any entry."""
    splits = table.column("split").to_pylist()
    keep = set(train_splits)
    return {normalize_definition(d) for d, s in zip(table.column("definition").to_pylist(), splits) if s in keep}


def _readable(row_split: str, query_split: str) -> bool:
    """Whether a figure on ``query_split`` may read a row of ``row_split``: a figure on any split
    but test (a selection figure) never reads the test split, not even as candidates."""
    return query_split == "test" or row_split != "test"


def prepare_queries(table: pa.Table, *, split: str = "test", candidates: CandidateSet = "all",
                    max_queries: int | None = 2000, exclude: set[str] | None = None) -> RevdictQueries:
    """Choose candidate entries and up to ``max_queries`` query definitions, deterministically.

    Candidates are the entries of every split (``all``) or of ``split`` alone; for a split other
    than test (a selection figure) ``all`` leaves out the test split, so no choice reads test data.
    Queries are definitions of ``split`` whose entry has at least two definitions, taken in the
    order of a hash of (entry, definition), so the same dictionary always gives the same queries
    and adding entries moves few of them. A definition whose :func:`normalize_definition` text is
    in ``exclude`` (what the model was trained on, :func:`trained_texts`) is never a query; those
    are counted in ``n_excluded`` (before ``max_queries`` applies).
    """
    if candidates not in get_args(CandidateSet):
        raise ValueError(f"candidates must be one of {get_args(CandidateSet)}, got {candidates!r}")
    for col in ("entry", "definition", "split"):
        if col not in table.column_names:
            raise ValueError(f"dictionary table has no {col!r} column (columns: {table.column_names})")
    entry = table.column("entry").to_pylist()
    definition = table.column("definition").to_pylist()
    splits = table.column("split").to_pylist()
    rows = [i for i, s in enumerate(splits) if s == split or (candidates == "all" and _readable(s, split))]
    names = sorted({entry[i] for i in rows})
    index = {e: k for k, e in enumerate(names)}
    defs = [definition[i] for i in rows]
    def_entry = np.fromiter((index[entry[i]] for i in rows), dtype=np.int64, count=len(rows))
    counts = np.bincount(def_entry, minlength=len(names))
    eligible = [j for j, i in enumerate(rows) if splits[i] == split and counts[def_entry[j]] >= 2]
    n_excluded = 0
    if exclude:
        unseen = [j for j in eligible if normalize_definition(defs[j]) not in exclude]
        n_excluded = len(eligible) - len(unseen)
        eligible = unseen
    eligible.sort(key=lambda j: query_order_key(names[def_entry[j]], defs[j]))
    if max_queries is not None:
        eligible = eligible[:max_queries]
    return RevdictQueries(entries=names, definitions=defs, def_entry=def_entry,
                          query_rows=np.array(sorted(eligible), dtype=np.int64), split=split, candidates=candidates,
                          n_excluded=n_excluded)


# -- model metadata -----------------------------------------------------------------------------------
def model_meta(model: str | os.PathLike) -> dict[str, Any]:
    """The model record (``defsentflow.json``) of a model directory, references resolved (training
    pooling, pooler use, entry encoder, the entry matrix folder), or {}."""
    return resolved_record(resolve_model_path(model))


def _has_pooler(enc: Any) -> bool:
    return getattr(enc.model, "pooler", None) is not None


def load_ica(meta: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    """The ICA map the model's entry matrix was transformed with at training time (saved beside it).

    Raises:
        ValueError: the model records no entry matrix, or its matrix keeps no saved transform.
    """
    matrix = meta.get("entry_matrix")
    if not matrix:
        raise ValueError("the model was trained with ICA but records no entry matrix: its ICA space is unknown")
    try:
        found = EntryMatrix.load(matrix, mmap=True)
    except FileNotFoundError as exc:
        raise ValueError(f"the model's entry matrix is gone: {exc}") from None
    if found.ica is None:
        directory = Path(matrix).parent if Path(matrix).suffix == ".npy" else Path(matrix)
        raise ValueError(f"{directory}: no saved ICA transform ({IcaTransform.FILE}); the entry matrix was built "
                         "without ICA or before the ICA map was saved (commit f0d2839, 2026-11-22): rebuild it")
    return found.ica


# -- evaluation -----------------------------------------------------------------------------------------
def _candidate_rows(data: RevdictQueries) -> tuple:
    """Which rows a query set's candidates come from: runs with equal values share encoded vectors."""
    return (data.candidates, data.split if data.candidates == "split" else data.split == "test")


def evaluate_revdict(model: str | os.PathLike, dictionary: str | pa.Table, *, split: str = "test",
                     protocol: Protocol = "unseen", **kwargs: Any) -> dict[str, Any]:
    """Reverse-dictionary MRR and top-1/3/10 of ``model`` on one split under one protocol.

    See :func:`evaluate_revdict_runs` for the arguments.

    Example:
        >>> evaluate_revdict("minilm", "sample", split="test")["modes"]["cosine"]["mrr"]
    """
    return evaluate_revdict_runs(model, dictionary, runs=[(split, protocol)], **kwargs)[0]


def evaluate_revdict_runs(model: str | os.PathLike, dictionary: str | pa.Table, *,
                          runs: Sequence[tuple[str, str]] = (("test", "unseen"),),
                          candidates: CandidateSet = "all", modes: Sequence[str] = MODES,
                          pooling: str | None = None, use_pooler: bool | None = None,
                          entry_encoder: str | os.PathLike | None = None, entry_encoding: str | None = None,
                          ica: bool | None = None, normalize_logits: bool | None = None,
                          train_splits: Sequence[str] | None = None,
                          max_queries: int | None = 2000, batch_size: int = 128, max_length: int = 64,
                          autocast: str = "none", device: str = "auto", cache: bool = False,
                          task: str | None = None, root: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """Reverse-dictionary figures of ``model`` for each ``(split, protocol)`` of ``runs``.

    Definition vectors are encoded once and shared by the runs. Settings left as None come from
    the model's ``defsentflow.json`` (written at training time), else: mean pooling, the pooler
    when the model has one, the model itself as entry encoder, AMP for mean pooling and AC for
    CLS pooling, no ICA, trained on the ``train`` split. ``pooling`` is the cosine mode's; the
    head mode always uses the training-time pooling when the model records one (the head's
    input). A model trained with ICA is scored in the ICA space fitted at training time.

    Args:
        model: model directory, Hugging Face id or ``minilm``.
        dictionary: dataset name/key or a table with entry, definition and split columns.
        runs: ``(split, protocol)`` pairs; split ``dev`` is for model selection, ``test`` for
            reporting; protocol ``unseen`` or ``multi-definition`` (see the module docstring).
        candidates: ``all`` entries of the dataset, or only the entries of the split.
        train_splits: the splits the model was trained on (default: the model's record, else
            ``train``); the ``unseen`` protocol excludes queries whose text occurs in them.
        max_queries: at most this many queries per run (deterministic choice).
        cache: cache definition vectors in the data root's embedding cache.
        task: metric task name (one run only); default see :func:`revdict_task`.
        root: data root holding the dictionary (default ``$DEFSENTFLOW_HOME`` or ``./storage``).

    Returns:
        One dict per run: ``{"split", "protocol", "candidates", "n_queries", "n_excluded",
        "n_candidates", "n_definitions", "pooling", "modes": {mode: {"mrr", "top1", "top3",
        "top10"}}, "rows": [metric rows for the catalog]}``.
    """
    bad = [m for m in modes if m not in ALL_MODES]
    if bad or not modes:
        raise ValueError(f"modes must be a non-empty subset of {ALL_MODES}, got {list(modes)}")
    bad = [p for _, p in runs if p not in REVDICT_PROTOCOLS]
    if bad or not runs:
        raise ValueError(f"reverse-dictionary protocols must be among {REVDICT_PROTOCOLS}, got {[p for _, p in runs]}"
                         + (" (all-definitions is word prediction's: leave-one-out needs an entry's second definition)"
                            if "all-definitions" in bad else ""))
    if task is not None and len(runs) != 1:
        raise ValueError("task names one run; give one (split, protocol) with it")
    meta = model_meta(model)
    pooling = validate_pooling(pooling or meta.get("pooling") or "mean")

    table = tables.load_dictionary_table(dictionary, root=root)
    train_splits = tuple(train_splits or meta.get("train_splits") or ("train",))
    seen = trained_texts(table, train_splits) if any(p == "unseen" for _, p in runs) else None
    datasets = []
    for split, protocol in runs:
        data = prepare_queries(table, split=split, candidates=candidates, max_queries=max_queries,
                               exclude=seen if protocol == "unseen" else None)
        if len(data.query_rows) == 0:
            why = (f" ({data.n_excluded} excluded: the model trained on their text in {list(train_splits)})"
                   if data.n_excluded else " (entries need >= 2 definitions)")
            raise ValueError(f"no reverse-dictionary queries in split {split!r} under protocol {protocol!r}{why}")
        datasets.append((protocol, data))

    enc = load_encoder(model, device=device)
    kw = dict(batch_size=batch_size, max_length=max_length, autocast=autocast, cache=cache)
    own_vecs: dict[tuple, np.ndarray] = {}

    def vectors_of(encoder: Any, pool: str, data: RevdictQueries) -> np.ndarray:
        key = (id(encoder), pool, _candidate_rows(data))
        if key not in own_vecs:
            own_vecs[key] = encode_texts(encoder, data.definitions, pooling=pool, desc=f"revdict {pool}", **kw)
            require_finite(own_vecs[key], model=str(model), what="definition vectors")
        return own_vecs[key]

    head: dict[str, Any] = {}
    if "head" in modes:
        use_pooler = meta.get("use_pooler", _has_pooler(enc)) if use_pooler is None else use_pooler
        entry_encoder = entry_encoder or meta.get("entry_encoder")
        head_pooling = validate_pooling(meta.get("pooling") or pooling)
        entry_encoding = entry_encoding or meta.get("entry_encoding") or ("ac" if head_pooling == "cls" else "amp")
        if entry_encoding not in ("ac", "amp"):
            raise ValueError(f"entry_encoding must be 'ac' or 'amp', got {entry_encoding!r}")
        ica = bool(meta.get("ica", False)) if ica is None else ica
        normalize_logits = bool(meta.get("normalize_logits", False)) if normalize_logits is None else normalize_logits
        head = dict(use_pooler=use_pooler, head_pooling=head_pooling, entry_encoding=entry_encoding,
                    transform=load_ica(meta) if ica else None, normalize_logits=normalize_logits,
                    ent=enc if entry_encoder is None else load_encoder(entry_encoder, device=device))
    words_cache: dict[tuple, np.ndarray] = {}
    results = []
    for protocol, data in datasets:
        result: dict[str, Any] = {
            "split": data.split, "protocol": protocol, "candidates": candidates,
            "n_queries": int(len(data.query_rows)), "n_excluded": int(data.n_excluded),
            "n_candidates": len(data.entries), "n_definitions": len(data.definitions), "pooling": pooling,
            "train_splits": list(train_splits), "modes": {},
        }
        n = len(data.entries)
        if "cosine" in modes:
            vecs = vectors_of(enc, pooling, data)
            result["modes"]["cosine"] = rank_metrics(
                revdict_ranks(vecs[data.query_rows], data.query_rows, vecs, data.def_entry, n, cosine=True))
        if "hybrid" in modes:
            vecs = vectors_of(enc, pooling, data)
            wkey = _candidate_rows(data)
            if wkey not in words_cache:
                words_cache[wkey] = encode_texts(enc, [headword_text(e) for e in data.entries], pooling=pooling,
                                                 desc="revdict headwords", **kw)
            result["modes"]["hybrid"] = rank_metrics(
                revdict_ranks(vecs[data.query_rows], data.query_rows, vecs, data.def_entry, n, cosine=True,
                              entry_vecs=words_cache[wkey]))
        if head:
            def_vecs = vectors_of(head["ent"], "cls" if head["entry_encoding"] == "ac" else "mean", data)
            queries = sentence_head_vectors(enc.path, data.query_texts, head["head_pooling"], head["use_pooler"],
                                            batch_size=batch_size, max_length=max_length, autocast=autocast,
                                            device=device)
            result["modes"]["head"] = rank_metrics(
                revdict_ranks(np.asarray(queries), data.query_rows, def_vecs, data.def_entry, n,
                              cosine=head["normalize_logits"], transform=head["transform"]))
            result.update(entry_encoder=str(entry_encoder or model), entry_encoding=head["entry_encoding"],
                          use_pooler=head["use_pooler"], ica=head["transform"] is not None,
                          head_pooling=head["head_pooling"])
        result["rows"] = revdict_metric_rows(result, task=task)
        results.append(result)
    return results


def revdict_task(split: str, protocol: str = "unseen") -> str:
    """The catalog task of a reverse-dictionary figure: ``revdict`` (test, unseen queries),
    ``revdict-dev`` (dev, unseen: the selection figure), ``revdict-multidef`` /
    ``revdict-dev-multidef`` (every definition of an entry with at least two, seen or not)."""
    base = "revdict" if split == "test" else f"revdict-{split}"
    return base + PROTOCOL_SUFFIX[protocol]


def revdict_metric_rows(result: dict[str, Any], *, task: str | None = None) -> list[dict[str, Any]]:
    """Catalog metric rows (see :func:`revdict_task`), setting = mode; ``n`` queries used and
    ``n_excluded`` queries left out as seen in training."""
    task = task or revdict_task(result["split"], result.get("protocol", "unseen"))
    return [{"task": task, "setting": mode, "metric": metric, "value": value, "n": result["n_queries"],
             "n_excluded": result.get("n_excluded", 0), "pooling": result["pooling"]}
            for mode, metrics in result["modes"].items() for metric, value in metrics.items()]
