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

Queries follow a protocol of :mod:`defsentflow.evaluation.protocols`, one meaning for word
prediction too: ``unseen`` (the default, task ``revdict`` / ``revdict-<split>``: definitions whose
text the model never trained on, at most ``max_queries``; a synset's gloss is shared by all its
lemmas, so with a split by entry the same gloss can be trained under one lemma and queried under
another: those are excluded and counted, ``n_excluded``) or ``multi-definition`` (task
``revdict-multidef``: every definition of an entry with at least two, seen or not, no cap). Neither
paper evaluates a reverse dictionary (DefSent's Table 2 is word prediction over every test
definition, :mod:`defsentflow.evaluation.wordpred`'s ``all-definitions``; DefSent+ leaves the
reverse dictionary to future work, its Sec. 7). ``all-definitions`` is word prediction's only:
leave-one-out needs a second definition.

Figures: ``mrr`` over the full ranking, ``mrr@10`` as DefSent's reference ``get_mrr`` (def2word.py)
computes it (1/rank for a rank within the top 10, else 0), top-1/3/10 accuracy and ``n_tied``, the
queries whose own entry tied with another (:mod:`defsentflow.evaluation.ranks`: pessimistic ranks
by default). Figure names carry every setting that changes them (:mod:`defsentflow.eval_tasks`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, get_args

import numpy as np
import pyarrow as pa

from defsentflow.config_tools import CandidateSet, RevdictMode, RevdictProtocol
from defsentflow.dictionary import tables
from defsentflow.encoders import encode_texts, load_encoder, validate_pooling
from defsentflow.encoders.finite import NonFiniteError, require_finite
from defsentflow.encoders.loading import resolve_model_path
from defsentflow.eval_tasks import CANONICAL, TASKS, FigureSettings, TieRule, dictionary_task
from defsentflow.evaluation.protocols import normalize_definition, select_queries, trained_texts
from defsentflow.evaluation.ranks import gold_ranks, rank_metrics, validate_ties
from defsentflow.model import ENTRY_POOLING, Head, head_ica, model_head, record_of
from defsentflow.model.query import sentence_head_vectors

__all__ = [
    "CandidateSet",
    "Protocol",
    "REVDICT_PROTOCOLS",
    "RevdictMode",
    "RevdictQueries",
    "candidate_set",
    "entry_sums",
    "evaluate_revdict_runs",
    "normalize_definition",
    "trained_texts",
    "headword_text",
    "evaluate_revdict",
    "prepare_queries",
    "revdict_metric_rows",
    "revdict_ranks",
]

Protocol = RevdictProtocol
REVDICT_PROTOCOLS: tuple[str, ...] = TASKS["revdict"].protocols
ALL_MODES: tuple[str, ...] = get_args(RevdictMode)
MODES: tuple[str, ...] = ("head", "cosine")  # the default


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
                  entry_vecs: np.ndarray | None = None, ties: TieRule = "pessimistic", chunk: int = 512,
                  with_ties: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
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
        ties: how an own entry tied with others is ranked (:mod:`defsentflow.evaluation.ranks`).
        with_ties: also return how many other entries tied with each query's own entry.

    Returns:
        ``[Q]`` float64 ranks, 1 = the own entry scored highest (and the tie counts, ``with_ties``).
    """
    for what, vecs in (("query", query_vecs), ("definition", def_vecs), ("entry", entry_vecs)):
        if vecs is not None and not np.isfinite(vecs).all():  # NaN scores would still give finite ranks
            raise NonFiniteError(f"reverse dictionary: finite-value check failed: the {what} vectors hold NaN or "
                                 "infinity; the model files may be corrupt (`defsentflow verify`)")
    validate_ties(ties)
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
    ranks = np.empty(len(q), dtype=np.float64)
    tied = np.empty(len(q), dtype=np.int64)
    for start in range(0, len(q), chunk):
        sl = slice(start, start + chunk)
        scores = q[sl] @ means.T
        own_score = np.einsum("ij,ij->i", q[sl], loo[sl])
        scores[np.arange(scores.shape[0]), own[sl]] = own_score
        ranks[sl], tied[sl] = gold_ranks(scores, own[sl], ties, own=own_score)
    return (ranks, tied) if with_ties else ranks


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


def _readable(row_split: str, query_split: str) -> bool:
    """Whether a figure on ``query_split`` may read a row of ``row_split``: a figure on any split
    but test (a selection figure) never reads the test split, not even as candidates."""
    return query_split == "test" or row_split != "test"


def _columns(table: pa.Table) -> tuple[list[str], list[str], list[str]]:
    for col in ("entry", "definition", "split"):
        if col not in table.column_names:
            raise ValueError(f"dictionary table has no {col!r} column (columns: {table.column_names})")
    return (table.column("entry").to_pylist(), table.column("definition").to_pylist(),
            table.column("split").to_pylist())


def _candidates(table: pa.Table, split: str, candidates: CandidateSet) -> tuple[list[int], RevdictQueries]:
    if candidates not in get_args(CandidateSet):
        raise ValueError(f"candidates must be one of {get_args(CandidateSet)}, got {candidates!r}")
    entry, definition, splits = _columns(table)
    rows = [i for i, s in enumerate(splits) if s == split or (candidates == "all" and _readable(s, split))]
    names = sorted({entry[i] for i in rows})
    index = {e: k for k, e in enumerate(names)}
    def_entry = np.fromiter((index[entry[i]] for i in rows), dtype=np.int64, count=len(rows))
    return rows, RevdictQueries(entries=names, definitions=[definition[i] for i in rows], def_entry=def_entry,
                                query_rows=np.zeros(0, dtype=np.int64), split=split, candidates=candidates)


def candidate_set(table: pa.Table, *, split: str = "test", candidates: CandidateSet = "all") -> RevdictQueries:
    """The candidate entries and their definitions for a figure on ``split``, with no query: every
    entry of every split (``all``; for a split other than test, a selection figure, the test split is
    left out, so no choice reads test data) or of ``split`` alone."""
    return _candidates(table, split, candidates)[1]


def prepare_queries(table: pa.Table, *, split: str = "test", protocol: str = "unseen", candidates: CandidateSet = "all",
                    max_queries: int | None = 2000, exclude: set[str] | None = None) -> RevdictQueries:
    """The candidate set (:func:`candidate_set`) and the query rows of ``split`` under ``protocol``
    (:func:`defsentflow.evaluation.protocols.select_queries`; ``unseen`` needs ``exclude``, the
    normalised texts the model trained on, and takes at most ``max_queries``)."""
    if protocol not in REVDICT_PROTOCOLS:
        raise ValueError(f"reverse-dictionary protocols are {REVDICT_PROTOCOLS}, got {protocol!r}"
                         + (" (all-definitions is word prediction's: leave-one-out needs an entry's second definition)"
                            if protocol == "all-definitions" else ""))
    rows, data = _candidates(table, split, candidates)
    entry, definition, splits = _columns(table)
    chosen = select_queries(entry, definition, splits, split=split, protocol=protocol, exclude=exclude,
                            max_queries=max_queries)
    position = {i: j for j, i in enumerate(rows)}
    return RevdictQueries(entries=data.entries, definitions=data.definitions, def_entry=data.def_entry,
                          query_rows=np.array(sorted(position[i] for i in chosen.rows), dtype=np.int64), split=split,
                          candidates=candidates, n_excluded=chosen.n_excluded)


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
                          pooling: str | None = None, head: Head | None = None,
                          max_queries: int | None = CANONICAL.max_queries, batch_size: int = 128,
                          max_length: int = CANONICAL.max_length, autocast: str = "none", device: str = "auto",
                          cache: bool = False, ties: TieRule = "pessimistic",
                          root: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """Reverse-dictionary figures of ``model`` for each ``(split, protocol)`` of ``runs``.

    Definition vectors are encoded once and shared by the runs. The head mode scores with ``head``
    (default: the model's own, :func:`defsentflow.model.model_head`: its record, else the one table
    of defaults: mean pooling, no pooler, the model itself as entry encoder, AMP for mean pooling
    and AC for CLS pooling, no ICA); the model trained on its record's splits, else ``train``. ``pooling`` (default: the training pooling)
    is every mode's: the cosine modes' queries and entries, and the head mode's input. A model
    trained with ICA is scored in the ICA space fitted at training time.

    Args:
        model: model directory, Hugging Face id or ``minilm``.
        dictionary: dataset name/key or a table with entry, definition and split columns.
        runs: ``(split, protocol)`` pairs; split ``dev`` is for model selection, ``test`` for
            reporting; protocol ``unseen`` or ``multi-definition`` (see the module docstring).
        candidates: ``all`` entries of the dataset, or only the entries of the split.
        head: the head the head mode scores with (a run scores an untrained baseline with the head
            it trains).
        max_queries: at most this many ``unseen`` queries per run (deterministic choice).
        max_length, autocast: how every text is encoded.
        cache: cache definition vectors in the data root's embedding cache.
        ties: the rank of an own entry tied with others (``pessimistic``, ``mid``, ``optimistic``).
        root: data root holding the dictionary (default ``$DEFSENTFLOW_HOME`` or ``./storage``).

    Returns:
        One dict per run: ``{"split", "protocol", "candidates", "task", "ties", "n_queries",
        "n_excluded", "n_candidates", "n_definitions", "pooling", "modes": {mode: {"mrr", "mrr@10",
        "top1", "top3", "top10", "n_tied"}}, "rows": [metric rows for the catalog]}``.
    """
    bad = [m for m in modes if m not in ALL_MODES]
    if bad or not modes:
        raise ValueError(f"modes must be a non-empty subset of {ALL_MODES}, got {list(modes)}")
    bad = [p for _, p in runs if p not in REVDICT_PROTOCOLS]
    if bad or not runs:
        raise ValueError(f"reverse-dictionary protocols must be among {REVDICT_PROTOCOLS}, got {[p for _, p in runs]}"
                         + (" (all-definitions is word prediction's: leave-one-out needs an entry's second definition)"
                            if "all-definitions" in bad else ""))
    validate_ties(ties)
    folder = resolve_model_path(model)
    record = record_of(folder)
    pooling = validate_pooling(model_head(folder, pooling=pooling, record=record).pooling)
    settings = FigureSettings(max_length=max_length, autocast=autocast, max_queries=max_queries,
                              candidates=candidates, ties=ties)

    table = tables.load_dictionary_table(dictionary, root=root)
    train_splits = tuple(record.trained_splits)
    seen = trained_texts(table, train_splits) if any(p == "unseen" for _, p in runs) else None
    datasets = []
    for split, protocol in runs:
        data = prepare_queries(table, split=split, protocol=protocol, candidates=candidates, max_queries=max_queries,
                               exclude=seen if protocol == "unseen" else None)
        if len(data.query_rows) == 0:
            why = (f" ({data.n_excluded} excluded: the model trained on their text in {list(train_splits)})"
                   if data.n_excluded else " (entries need >= 2 definitions in the split)")
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

    def ranked(*args: Any, **kwargs: Any) -> dict[str, float]:
        return rank_metrics(*revdict_ranks(*args, ties=ties, with_ties=True, **kwargs), ties=ties)

    scoring: dict[str, Any] = {}
    if "head" in modes:
        spec = head or model_head(folder, pooling=pooling, record=record)
        entry_encoder = spec.entry_encoder
        scoring = dict(use_pooler=spec.use_pooler, entry_encoding=spec.entry_encoding,
                       transform=head_ica(spec) if spec.ica else None, normalize_logits=spec.normalize_logits,
                       ent=enc if entry_encoder is None else load_encoder(entry_encoder, device=device))
    words_cache: dict[tuple, np.ndarray] = {}
    results = []
    for protocol, data in datasets:
        result: dict[str, Any] = {
            "split": data.split, "protocol": protocol, "candidates": candidates, "ties": ties,
            "task": dictionary_task("revdict", data.split, protocol, settings),
            "n_queries": int(len(data.query_rows)), "n_excluded": int(data.n_excluded),
            "n_candidates": len(data.entries), "n_definitions": len(data.definitions), "pooling": pooling,
            "train_splits": list(train_splits), "modes": {},
        }
        n = len(data.entries)
        if "cosine" in modes:
            vecs = vectors_of(enc, pooling, data)
            result["modes"]["cosine"] = ranked(vecs[data.query_rows], data.query_rows, vecs, data.def_entry, n,
                                               cosine=True)
        if "hybrid" in modes:
            vecs = vectors_of(enc, pooling, data)
            wkey = _candidate_rows(data)
            if wkey not in words_cache:
                words_cache[wkey] = encode_texts(enc, [headword_text(e) for e in data.entries], pooling=pooling,
                                                 desc="revdict headwords", **kw)
            result["modes"]["hybrid"] = ranked(vecs[data.query_rows], data.query_rows, vecs, data.def_entry, n,
                                               cosine=True, entry_vecs=words_cache[wkey])
        if scoring:
            def_vecs = vectors_of(scoring["ent"], ENTRY_POOLING[scoring["entry_encoding"]], data)
            queries = sentence_head_vectors(enc.path, data.query_texts, pooling, scoring["use_pooler"],
                                            batch_size=batch_size, max_length=max_length, autocast=autocast,
                                            device=device)
            result["modes"]["head"] = ranked(np.asarray(queries), data.query_rows, def_vecs, data.def_entry, n,
                                             cosine=scoring["normalize_logits"], transform=scoring["transform"])
            result.update(entry_encoder=str(entry_encoder or model), entry_encoding=scoring["entry_encoding"],
                          use_pooler=scoring["use_pooler"], ica=scoring["transform"] is not None)
        result["rows"] = revdict_metric_rows(result)
        results.append(result)
    return results


def revdict_metric_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Catalog metric rows of one run's result, task ``result["task"]``, setting = mode; ``n`` queries
    used and ``n_excluded`` queries left out as seen in training."""
    return [{"task": result["task"], "setting": mode, "metric": metric, "value": value, "n": result["n_queries"],
             "n_excluded": result.get("n_excluded", 0), "pooling": result["pooling"]}
            for mode, metrics in result["modes"].items() for metric, value in metrics.items()]
