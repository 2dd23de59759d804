"""Harvesting labelled sentence pairs: seeds -> neighbours -> context sets -> pair similarities.

The seed sentences are split into batches; a batch is self-contained (its own seeds, their
retrieval neighbours, random pairs among its sentences), so batches can run in any order, in
parallel, and a finished batch is never recomputed: its pairs are one Parquet part, written
atomically, and a part that exists is skipped.

Per batch:

1. retrieve ``top_n`` chunks for every seed;
2. neighbour pairs: for a seed, the sentences of its first ``neighbour_chunks`` retrieved chunks
   from *other* documents, ranked by word-set Jaccard with the seed (ties: retrieval rank, id);
   the seed is paired with the best ones (distinct texts, eligible lengths);
3. retrieve for the neighbours, then score every slot of every retrieved chunk of every batch
   sentence and choose each sentence's context set (:func:`select_context_set`);
4. random pairs: uniformly among the batch's sentences, distinct from the pairs so far;
5. label every pair (:func:`pair_similarities`) and write the part.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from defsentflow.scoring.config import HarvestConfig
from defsentflow.scoring.context_sets import (
    Selection,
    previous_word_matrix,
    random_context_set,
    select_context_set,
    top_context_set,
)
from defsentflow.scoring.contexts import CorpusLayout, jaccard, word_set
from defsentflow.scoring.pair_similarity import ScoreCache, pair_similarities
from defsentflow.scoring.scorer import ContextualScorer
from defsentflow.storage import write_parquet

__all__ = ["BatchSpec", "HarvestResources", "PAIRS_SCHEMA", "plan_batches", "eligible_sentences",
           "harvest_batch", "choose_context_sets", "part_path", "collect_parts", "label_stats"]

SearchFn = Callable[[list[str], int], tuple[np.ndarray, np.ndarray]]

PAIRS_SCHEMA = pa.schema([
    ("batch", pa.int32()),
    ("pair_idx", pa.int32()),
    ("s1_id", pa.int64()),
    ("s2_id", pa.int64()),
    ("s1", pa.string()),
    ("s2", pa.string()),
    ("score", pa.float32()),
    ("kind", pa.string()),  # neighbour | random
    ("s1_contexts", pa.list_(pa.int64())),
    ("s2_contexts", pa.list_(pa.int64())),
    ("scorer_version", pa.string()),
])


@dataclass(frozen=True)
class BatchSpec:
    """One batch: its index, seed sentence ids and how many pairs of each kind it makes."""

    index: int
    seeds: tuple[int, ...]
    n_neighbour: int
    n_random: int


@dataclass
class HarvestResources:
    """Everything a batch reads; loaded once per process.

    Attributes:
        layout: the corpus layout (contexts are its slots).
        texts: sentence texts by id: corpus sentences, then extra sentences.
        vectors: the discriminative encoder's vectors, same rows as ``texts``.
        scorer: ``S(s, c)``.
        search: ``search(queries, top_n) -> (chunk ids [Q, n], scores [Q, n])``; ids < 0 are padding.
        doc_of: per sentence id, its document's first sentence id (-1 for extra sentences).
    """

    layout: CorpusLayout
    texts: Sequence[str]
    vectors: np.ndarray
    scorer: ContextualScorer
    search: SearchFn
    doc_of: np.ndarray = field(init=False)
    _words: dict[int, frozenset[str]] = field(default_factory=dict, init=False, repr=False)
    _previous: sp.csr_matrix | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        n = self.layout.n_sentences
        if len(self.texts) != len(self.vectors) or len(self.texts) < n:
            raise ValueError("texts and vectors must hold the corpus sentences (then any extras), row-aligned")
        self.doc_of = np.concatenate([self.layout.doc_start, np.full(len(self.texts) - n, -1, dtype=np.int64)])

    def words(self, sentence_id: int) -> frozenset[str]:
        w = self._words.get(sentence_id)
        if w is None:
            w = self._words[sentence_id] = word_set(self.texts[sentence_id])
        return w

    def previous_words(self, context_id: int) -> frozenset[str]:
        lay = self.layout
        return self.words(context_id - 1) if context_id > lay.doc_start[context_id] else frozenset()

    def previous_word_matrix(self) -> sp.csr_matrix:
        """:func:`previous_words` of every context as rows of one binary matrix (built once)."""
        if self._previous is None:
            # the layout's c_{i-1} rule; the sets are not kept in self._words (every sentence's would be)
            self._previous = previous_word_matrix(lambda c: word_set(self.layout.previous_sentence(c)),
                                                  self.layout.n_sentences)
        return self._previous

    def score_ids(self, sentence_ids: np.ndarray, context_ids: np.ndarray, k: int) -> np.ndarray:
        return self.scorer.score_ids(self.layout, self.vectors, self.texts, sentence_ids, context_ids, k)


def eligible_sentences(texts: Sequence[str], min_words: int, max_words: int) -> np.ndarray:
    """Ids of sentences with ``min_words..max_words`` whitespace-separated words."""
    counts = np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))
    return np.flatnonzero((counts >= min_words) & (counts <= max_words))


def plan_batches(eligible: np.ndarray, cfg: HarvestConfig) -> list[BatchSpec]:
    """Draw the seeds (seeded) and split them and the pair budget into batches."""
    n_seeds = min(len(eligible), int(np.ceil(cfg.pairs.n_pairs / cfg.pairs.pairs_per_sentence)))
    if n_seeds < 2:
        raise ValueError(f"only {len(eligible)} eligible sentences: too few to make pairs")
    seeds = np.random.default_rng(cfg.seed).permutation(np.asarray(eligible, dtype=np.int64))[:n_seeds]
    bounds = list(range(0, n_seeds, cfg.batch_size)) + [n_seeds]
    if len(bounds) > 2 and bounds[-1] - bounds[-2] < cfg.batch_size / 2:
        del bounds[-2]  # a short last batch joins the one before: too few sentences to pair at random
    # pairs per batch in proportion to its seeds, summing exactly to n_pairs
    cum = np.round(np.asarray(bounds, dtype=np.float64) / n_seeds * cfg.pairs.n_pairs).astype(np.int64)
    specs = []
    for b in range(len(bounds) - 1):
        total = int(cum[b + 1] - cum[b])
        n_nb = int(round(total * cfg.pairs.neighbour_share))
        specs.append(BatchSpec(b, tuple(int(x) for x in seeds[bounds[b]:bounds[b + 1]]), n_nb, total - n_nb))
    return specs


def part_path(parts_dir: str | os.PathLike, index: int, what: str = "pairs") -> Path:
    return Path(parts_dir) / f"{what}-{index:05d}.parquet"


def _retrieve(res: HarvestResources, ids: np.ndarray, top_n: int) -> dict[int, np.ndarray]:
    if not len(ids):
        return {}
    chunk_ids, _ = res.search([res.texts[i] for i in ids], top_n)
    out = {}
    for i, row in zip(ids.tolist(), np.asarray(chunk_ids)):
        row = row[row >= 0]
        out[i] = row[np.sort(np.unique(row, return_index=True)[1])]  # first occurrence, rank order kept
    return out


def _neighbours(res: HarvestResources, seed: int, chunks: np.ndarray, want: int, cfg: HarvestConfig,
                eligible: set[int]) -> list[int]:
    lay = res.layout
    own_doc = res.doc_of[seed]
    own_text = " ".join(res.texts[seed].lower().split())
    other = [c for c in chunks.tolist() if lay.doc_start[lay.chunk_first[c]] != own_doc][: cfg.pairs.neighbour_chunks]
    cands = []
    seen = {own_text}
    mine = res.words(seed)
    for rank, c in enumerate(other):
        for sid in range(int(lay.chunk_first[c]), int(lay.chunk_last[c]) + 1):
            text = " ".join(res.texts[sid].lower().split())
            if sid in eligible and text not in seen:
                seen.add(text)
                cands.append((-jaccard(mine, res.words(sid)), rank, sid))
    return [sid for _, _, sid in sorted(cands)[:want]]


def _spread(total: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``total`` split over ``n`` slots as evenly as possible, the remainder to random slots."""
    out = np.full(n, total // n, dtype=np.int64)
    out[rng.permutation(n)[: total % n]] += 1
    return out


def _neighbour_pairs(res: HarvestResources, seeds: np.ndarray, retrieved: dict[int, np.ndarray], n_neighbour: int,
                     cfg: HarvestConfig, eligible: set[int], rng: np.random.Generator) -> list[tuple[int, int]]:
    pairs, seen = [], set()
    for seed, want in zip(seeds.tolist(), _spread(n_neighbour, len(seeds), rng).tolist()):
        for nb in _neighbours(res, seed, retrieved[seed], want, cfg, eligible) if want else ():
            key = (min(seed, nb), max(seed, nb))
            if key not in seen:
                seen.add(key)
                pairs.append((seed, nb))
    return pairs


def _random_pairs(members: np.ndarray, n: int, taken: list[tuple[int, int]], rng: np.random.Generator,
                  batch: int) -> list[tuple[int, int]]:
    seen = {(min(a, b), max(a, b)) for a, b in taken}
    if n > len(members) * (len(members) - 1) // 2 - len(seen):
        raise ValueError(f"batch {batch}: {len(members)} sentences cannot make {n} more distinct pairs; "
                         "raise batch_size or lower pairs.pairs_per_sentence")
    pairs = []
    while len(pairs) < n:
        a, b = members[rng.integers(0, len(members), size=2)].tolist()
        key = (min(a, b), max(a, b))
        if a != b and key not in seen:
            seen.add(key)
            pairs.append((a, b))
    return pairs


def choose_context_sets(res: HarvestResources, members: np.ndarray, retrieved: dict[int, np.ndarray],
                        cache: ScoreCache, score_fn: Callable, *, size: int, selection: Selection = "diverse",
                        max_jaccard: float = 0.5, seed: int = 0) -> dict[int, np.ndarray]:
    """``C_s`` of each member by ``selection`` (see :mod:`defsentflow.scoring.context_sets`).

    ``diverse`` and ``top`` score every slot of every retrieved chunk of the members in one
    vectorised call (through ``cache``), then choose.

    ``random`` needs neither ``retrieved`` nor scores: each sentence draws from the whole corpus
    with its own generator (seeded by ``seed`` and its id), so its set does not depend on the batch.
    """
    members = np.asarray(members, dtype=np.int64)
    if selection == "random":
        n = res.layout.n_sentences
        return {m: random_context_set(n, size, np.random.default_rng([seed, m])) for m in members.tolist()}
    slots = [res.layout.slots(retrieved[m]) for m in members.tolist()]
    sids = np.repeat(members, [len(cids) for cids, _ in slots])
    scores = cache.get_or_score(sids, np.concatenate([cids for cids, _ in slots]) if slots else np.zeros(0, np.int64),
                                score_fn)
    out, start = {}, 0
    for m, (cids, owner) in zip(members.tolist(), slots):
        part = scores[start:start + len(cids)]
        if selection == "top":
            out[m] = top_context_set(cids, part, size)
        else:
            out[m] = select_context_set(cids, owner, part, size, word_matrix=res.previous_word_matrix(),
                                        max_jaccard=max_jaccard)
        start += len(cids)
    return out


def harvest_batch(res: HarvestResources, spec: BatchSpec, cfg: HarvestConfig, parts_dir: str | os.PathLike,
                  eligible: np.ndarray, *, scorer_version: str | None = None) -> dict:
    """Run one batch and write its parts; a batch whose pairs part exists is skipped.

    Returns:
        ``{"index", "path", "scores_path", "n_pairs", "computed", "n_scored"}``.
    """
    out = part_path(parts_dir, spec.index)
    scores_out = part_path(parts_dir, spec.index, "scores")
    if out.exists():
        return {"index": spec.index, "path": str(out), "scores_path": str(scores_out),
                "n_pairs": pq.read_metadata(out).num_rows, "computed": False, "n_scored": 0}
    version = scorer_version or res.scorer.version
    rng = np.random.default_rng([cfg.seed, spec.index])
    seeds = np.asarray(spec.seeds, dtype=np.int64)
    retrieved = _retrieve(res, seeds, cfg.retrieval.top_n)  # 1
    neighbour = _neighbour_pairs(res, seeds, retrieved, spec.n_neighbour, cfg,  # 2
                                 set(np.asarray(eligible).tolist()), rng)
    members = np.unique(np.asarray([s for p in neighbour for s in p] + seeds.tolist(), dtype=np.int64))
    retrieved.update(_retrieve(res, np.setdiff1d(members, seeds), cfg.retrieval.top_n))
    cache = ScoreCache(version)
    score_fn = lambda s, c: res.score_ids(s, c, cfg.contexts.k)  # noqa: E731
    context_sets = choose_context_sets(res, members, retrieved, cache, score_fn, size=cfg.contexts.set_size,  # 3
                                       selection=cfg.contexts.selection, max_jaccard=cfg.contexts.max_jaccard, seed=cfg.seed)
    # neighbours that could not be found are made up with random pairs
    random = _random_pairs(members, spec.n_neighbour + spec.n_random - len(neighbour), neighbour, rng, spec.index)  # 4
    arr = np.asarray(neighbour + random, dtype=np.int64).reshape(-1, 2)
    scores = pair_similarities(arr, context_sets, cache, score_fn, center=cfg.pairs.similarity == "centered_cosine")  # 5
    first, second = arr[:, 0].tolist(), arr[:, 1].tolist()
    table = pa.table({
        "batch": np.full(len(arr), spec.index, dtype=np.int32),
        "pair_idx": np.arange(len(arr), dtype=np.int32),
        "s1_id": arr[:, 0], "s2_id": arr[:, 1],
        "s1": [res.texts[i] for i in first], "s2": [res.texts[i] for i in second],
        "score": scores, "kind": ["neighbour"] * len(neighbour) + ["random"] * len(random),
        "s1_contexts": [context_sets[i].tolist() for i in first],
        "s2_contexts": [context_sets[i].tolist() for i in second],
        "scorer_version": [version] * len(arr),
    }, schema=PAIRS_SCHEMA)
    cache.save(scores_out)  # scores first: the pairs part marks the batch as done
    write_parquet(table, out)
    return {"index": spec.index, "path": str(out), "scores_path": str(scores_out), "n_pairs": len(arr),
            "computed": True, "n_scored": cache.misses}


def collect_parts(parts_dir: str | os.PathLike, n_batches: int) -> pa.Table:
    """All pairs parts ``0..n_batches-1`` in order; an error names any that is missing."""
    paths = [part_path(parts_dir, b) for b in range(n_batches)]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"{parts_dir}: {len(missing)} batch parts missing ({', '.join(missing[:5])})")
    return pa.concat_tables([pq.read_table(p, schema=PAIRS_SCHEMA) for p in paths])


def label_stats(scores: np.ndarray, bins: int = 20) -> dict:
    """Mean, std, quantiles and a histogram of the labels (JSON-friendly)."""
    s = np.asarray(scores, dtype=np.float64)
    if not len(s):
        return {"n_pairs": 0}
    qs = [0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0]
    counts, edges = np.histogram(s, bins=bins)
    return {
        "n_pairs": int(len(s)), "mean": float(s.mean()), "std": float(s.std()),
        "quantiles": {f"q{int(round(q * 100)):02d}": float(v) for q, v in zip(qs, np.quantile(s, qs))},
        "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]},
    }
