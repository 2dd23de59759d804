"""Harvesting labels for given sentence pairs (``pairs.source: file``) instead of corpus pairs.

A corpus harvest pairs corpus sentences with their retrieval neighbours and at random: nearly
every random pair is unrelated and nearly every neighbour pair a near-duplicate, which is not the
graded similarity an STS task asks for. With ``pairs.source: file`` the pairs come from a file of
unlabelled sentence pairs (e.g. the sentences of the STS-B or SICK *train* split; any score
column in that file is never read) and the configured labeller (retrieval, ``S(s, c)``, context
sets, Eq. 4: :class:`~defsentflow.scoring.origin.PairLabeller`, the same code as the "Origin"
evaluation) labels them. Contexts still come from the corpus only.

The distinct sentences of the (seeded) pair sample are extra rows of the sentence pool (ids after
the corpus and its extra sentences); only they are encoded (``n_pairs: 2000`` of STS-B train's
5,749 pairs use 3,826 of its 10,518 sentences), and their vectors are cached on their own, so the
corpus is not re-encoded. A batch is a slice of the sample; its part has the corpus harvest's
schema with ``kind`` = ``file``.

Example:
    >>> pf = read_pair_file("sts-train.csv", columns=(5, 6))
    >>> pf.texts[pf.pairs[0, 0]], pf.texts[pf.pairs[0, 1]]
    ('A plane is taking off.', 'An air plane is taking off.')
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.scoring.config import HarvestConfig
from defsentflow.scoring.harvest import PAIRS_SCHEMA, part_path
from defsentflow.scoring.origin import OriginPoint, PairLabeller
from defsentflow.storage import write_parquet

__all__ = ["PairFile", "read_pair_file", "read_scored_pairs", "sample_pairs", "label_file_batch"]


@dataclass(frozen=True)
class PairFile:
    """The distinct sentences of a pairs file and its pairs as positions ``[P, 2]`` into them (file order)."""

    texts: tuple[str, ...]
    pairs: np.ndarray

    def subset(self, rows: np.ndarray) -> PairFile:
        """The pairs at ``rows`` (in that order) and only the sentences they use (first use first)."""
        chosen = self.pairs[np.asarray(rows, dtype=np.int64)]
        used, first, inverse = np.unique(chosen.ravel(), return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # position in the subset = order of first use
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return PairFile(tuple(self.texts[i] for i in used[order].tolist()), rank[inverse].reshape(chosen.shape))


def _clean(text: str | None, where: str) -> str:
    if text is None:
        raise ValueError(f"{where}: sentence is null")
    text = " ".join(text.split())
    if not text:
        raise ValueError(f"{where}: empty sentence")
    return text


def _tab_rows(p: Path, columns: Sequence[int], header: bool, key: str):
    """``(line number, fields)`` of a tab-separated file's non-empty lines, each with ``columns``."""
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = p.read_bytes()[:exc.start].count(b"\n") + 1
        raise ValueError(f"{p}: line {line}: not valid UTF-8") from None
    for n, row in enumerate(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
        if (header and n == 1) or not row or not "".join(row).strip():
            continue
        if len(row) <= max(columns):
            raise ValueError(f"{p}: line {n}: {len(row)} tab-separated columns, columns "
                             f"{', '.join(map(str, columns))} asked for ({key})")
        yield n, row


def read_scored_pairs(path: str | os.PathLike, *, columns: Sequence[int] = (5, 6), score_column: int = 4,
                      header: bool = False) -> tuple[list[str], list[str], np.ndarray]:
    """Gold-scored pairs of a tab-separated file (STS-B csv by default): first sentences, second ones, scores.

    Errors name the file and the line (a score that is not a finite number included).
    """
    p = Path(path)
    s1, s2, scores = [], [], []
    for n, row in _tab_rows(p, (*columns, score_column), header, "supervised.file_columns, score_column"):
        where = f"{p}: line {n}"
        try:
            score = float(row[score_column])
        except ValueError:
            raise ValueError(f"{where}: score {row[score_column]!r} is not a number") from None
        if not np.isfinite(score):
            raise ValueError(f"{where}: score {row[score_column]!r} is not finite")
        s1.append(_clean(row[columns[0]], where))
        s2.append(_clean(row[columns[1]], where))
        scores.append(score)
    if not scores:
        raise ValueError(f"{p}: no scored sentence pairs")
    return s1, s2, np.asarray(scores, dtype=np.float64)


def read_pair_file(path: str | os.PathLike, *, columns: Sequence[int] = (0, 1), header: bool = False) -> PairFile:
    """Sentence pairs from a tab-separated text file (two of its columns) or a Parquet file (``s1``, ``s2``).

    Only the two sentence columns are read. Errors name the file and the line (or record).
    """
    p = Path(path)
    raw: list[tuple[str, str]] = []
    if p.suffix == ".parquet":
        t = pq.read_table(p)
        missing = [c for c in ("s1", "s2") if c not in t.column_names]
        if missing:
            raise ValueError(f"{p}: no {', '.join(missing)} column (columns: {', '.join(t.column_names)})")
        for i, (a, b) in enumerate(zip(t.column("s1").to_pylist(), t.column("s2").to_pylist())):
            raw.append((_clean(a, f"{p}: record {i}"), _clean(b, f"{p}: record {i}")))
    else:
        c1, c2 = columns
        raw = [(_clean(row[c1], f"{p}: line {n}"), _clean(row[c2], f"{p}: line {n}"))
               for n, row in _tab_rows(p, columns, header, "pairs.file_columns")]
    if not raw:
        raise ValueError(f"{p}: no sentence pairs")
    index: dict[str, int] = {}
    pairs = np.asarray([[index.setdefault(a, len(index)), index.setdefault(b, len(index))] for a, b in raw],
                       dtype=np.int64)
    return PairFile(tuple(index), pairs)


def sample_pairs(pf: PairFile, n_pairs: int, seed: int, batch_size: int) -> list[np.ndarray]:
    """At most ``n_pairs`` of the file's pairs (a seeded sample, in file order), cut into batches of ``batch_size``.

    The harvest's ``pairs.n_pairs``, ``seed`` and ``batch_size``.
    """
    idx = np.arange(len(pf.pairs))
    if n_pairs < len(idx):
        idx = np.sort(np.random.default_rng(seed).permutation(len(idx))[:n_pairs])
    return [idx[a:a + batch_size] for a in range(0, len(idx), batch_size)]


def label_file_batch(labeller: PairLabeller, pf: PairFile, index: int, rows: np.ndarray, cfg: HarvestConfig,
                     parts_dir: str | os.PathLike, *, scorer_version: str) -> dict:
    """Label the pairs ``rows`` (indices into ``pf.pairs``) and write part ``index``; skipped when it exists."""
    out = part_path(parts_dir, index)
    scores_out = part_path(parts_dir, index, "scores")
    if out.exists():
        return {"index": index, "path": str(out), "scores_path": str(scores_out),
                "n_pairs": pq.read_metadata(out).num_rows, "computed": False, "n_scored": 0}
    point = OriginPoint(cfg.contexts.set_size, cfg.contexts.selection, cfg.retrieval.top_n, cfg.pairs.similarity)
    pairs = pf.pairs[np.asarray(rows, dtype=np.int64)]
    before = labeller.cache.misses
    sets = labeller.context_sets(pairs.ravel(), point)
    scores = labeller.similarities(pairs, point)
    ids = pairs + labeller.offset
    table = pa.table({
        "batch": np.full(len(pairs), index, dtype=np.int32),
        "pair_idx": np.arange(len(pairs), dtype=np.int32),
        "s1_id": ids[:, 0], "s2_id": ids[:, 1],
        "s1": [pf.texts[i] for i in pairs[:, 0].tolist()], "s2": [pf.texts[i] for i in pairs[:, 1].tolist()],
        "score": np.asarray(scores, dtype=np.float32), "kind": ["file"] * len(pairs),
        "s1_contexts": [sets[i].tolist() for i in ids[:, 0].tolist()],
        "s2_contexts": [sets[i].tolist() for i in ids[:, 1].tolist()],
        "scorer_version": [scorer_version] * len(pairs),
    }, schema=PAIRS_SCHEMA)
    labeller.cache.save(scores_out)  # scores first: the pairs part marks the batch as done
    write_parquet(table, out)
    return {"index": index, "path": str(out), "scores_path": str(scores_out), "n_pairs": len(pairs),
            "computed": True, "n_scored": labeller.cache.misses - before}
