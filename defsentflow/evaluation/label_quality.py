"""Label quality: the harvest's labeller ("Origin", Sun et al.) scored against STS gold judgments.

For a harvest config, every sentence pair of the STS tasks is labelled by the configured
labeller (:class:`~defsentflow.scoring.origin.PairLabeller`: retrieval over the configured corpus,
``S(s, c)``, context sets, Eq. 4) and the labels are compared with the gold scores (Spearman x
100, the ``all`` and ``mean`` settings of :mod:`defsentflow.evaluation.sts`). Beside it, on the
same pairs:

* ``tfidf``: TF-IDF cosine, the idf fitted on the task's own sentences;
* ``word_avg``: averaged input word-piece embeddings of the scorer's encoder;
* ``base``: the scorer's encoder's own cosine (mean pooling; the vectors the scorer reads).

Each labeller setting and baseline is a "model" of the catalog (method ``origin``, ``tfidf``,
``word_avg``, ``base``) with its metric rows, so the leaderboard and report read them like any
other evaluation.

Example:
    >>> result = run_label_quality(cfg, tasks=["stsb-dev"], data_dir="../shared/data",
    ...                            points=[OriginPoint(20, "diverse", 100)])
    >>> record_label_quality(Catalog(cfg.root), result)
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from defsentflow.evaluation.baselines import tfidf_similarities, word_vector_average
from defsentflow.evaluation.metrics import paired_cosine
from defsentflow.evaluation.sts import spearman_rows
from defsentflow.evaluation.sts_data import StsTask, load_task, validate_tasks
from defsentflow.scoring.origin import OriginPoint, PairLabeller
from defsentflow.scoring.stages import apply_threads, load_resources, prepare_refs, vectors_path
from defsentflow.scoring.vectors import cached_sentence_vectors
from defsentflow.storage import Catalog

__all__ = ["LABEL_QUALITY_METHODS", "LabelQualityResult", "record_label_quality", "run_label_quality"]

log = logging.getLogger(__name__)

LABEL_QUALITY_METHODS: tuple[str, ...] = ("origin", "tfidf", "word_avg", "base")


@dataclass(frozen=True)
class LabelQualityResult:
    """Metric rows (``model_id, method, task, setting, metric, value, n, pooling``), the models, timings."""

    rows: tuple[dict[str, Any], ...]
    models: tuple[dict[str, Any], ...]
    seconds: dict[str, float] = field(default_factory=dict)


class _Pool:
    """The distinct sentences of the tasks and, per task and subset, its pairs as positions into them."""

    def __init__(self, tasks: Sequence[StsTask]):
        index: dict[str, int] = {}
        self.pairs: list[list[np.ndarray]] = []
        for t in tasks:
            self.pairs.append([np.stack([[index.setdefault(x, len(index)) for x in s.sentences1],
                                         [index.setdefault(x, len(index)) for x in s.sentences2]], axis=1)
                               .reshape(-1, 2) for s in t.subsets])
        self.texts = list(index)
        self.tasks = tuple(tasks)

    def rows(self, similarity: Callable[[np.ndarray], np.ndarray], *, pooling: str | None = None) -> list[dict]:
        """Spearman rows of every task; ``similarity(pairs [P, 2]) -> [P]`` is called once for all pairs."""
        flat = [p for task_pairs in self.pairs for p in task_pairs]
        sims = similarity(np.concatenate(flat)) if flat else np.zeros(0)
        out, start = [], 0
        for task, task_pairs in zip(self.tasks, self.pairs):
            parts = []
            for p in task_pairs:
                parts.append(np.asarray(sims[start:start + len(p)], dtype=np.float64))
                start += len(p)
            out += spearman_rows(task, parts, pooling=pooling)
        return out


def _origin_model_id(corpus: str, retrieval: str, scorer_key: str, point: OriginPoint) -> str:
    """``origin-<corpus>-<retrieval>-<selection>-c<|C_s|>-n<top_n>-<scorer key prefix>``."""
    return f"origin-{corpus}-{retrieval}-{point.name}-{scorer_key[:8]}"


def run_label_quality(cfg: Any, *, tasks: Sequence[str] | str, data_dir: str | os.PathLike,
                      points: Sequence[OriginPoint] | None = None, baselines: bool = True,
                      run_id: str | None = None) -> LabelQualityResult:
    """Label every pair of ``tasks`` with each labeller setting in ``points`` (default: the config's own).

    Args:
        cfg: a :class:`~defsentflow.scoring.config.HarvestConfig`; its corpus, scorer and index
            are prepared (or found in the cache) as for a harvest.
        tasks: STS task names (``stsb-dev``, ``sts12`` ...).
        data_dir: the directory holding ``sts/`` (and ``sick/``).
        points: labeller settings; they share retrieval and the score cache.
        baselines: also compute the TF-IDF, averaged-word-vector and base-encoder rows.
    """
    apply_threads(cfg)
    c = cfg.contexts
    points = list(points or [OriginPoint(c.set_size, c.selection, cfg.retrieval.top_n, cfg.pairs.similarity)])
    pool = _Pool([load_task(data_dir, name) for name in validate_tasks(tasks)])
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    refs = prepare_refs(cfg, run_id)
    corpus = refs["corpus"]
    res = load_resources(cfg, refs)
    encoder = cfg.scorer.discriminative.encoder
    vectors = cached_sentence_vectors(vectors_path(Catalog(cfg.root).root, encoder, pool.texts), encoder, pool.texts)
    seconds["prepare"] = time.perf_counter() - t0
    labeller = PairLabeller(res, pool.texts, vectors, k=c.k, max_jaccard=c.max_jaccard, seed=cfg.seed)
    rows: list[dict[str, Any]] = []
    models: list[dict[str, Any]] = []

    def add(model: dict[str, Any], new_rows: list[dict[str, Any]]) -> None:
        models.append(model)
        rows.extend({**r, "model_id": model["model_id"], "method": model["method"]} for r in new_rows)

    # the largest top_n and |C_s| first: smaller ones are prefixes of its retrieval and context sets
    for point in sorted(points, key=lambda p: (p.selection == "random", -p.top_n, p.selection, -p.set_size)):
        t = time.perf_counter()
        point_rows = pool.rows(lambda pairs, point=point: labeller.similarities(pairs, point))
        seconds[point.name] = time.perf_counter() - t
        log.info("origin %s: %s in %.0fs", point.name,
                 ", ".join(f"{r['task']} {r['value']:.2f}" for r in point_rows if r["setting"] == "all"),
                 seconds[point.name])
        add({"model_id": _origin_model_id(corpus["name"], cfg.retrieval.kind, refs["scorer"]["key"], point),
             "method": "origin", "base_model": encoder, "path": refs["scorer"]["path"], "pooling": None,
             "meta": {"label": f"origin {point.name}", "set_size": point.set_size, "selection": point.selection,
                      "top_n": point.top_n, "similarity": point.similarity, "retrieval": cfg.retrieval.kind, "corpus": corpus["name"],
                      "corpus_key": corpus["key"], "scorer_key": refs["scorer"]["key"], "seconds": seconds[point.name]}},
            point_rows)
    if baselines:
        t = time.perf_counter()
        add(_baseline_model("tfidf-cosine", "tfidf", None, "TF-IDF cosine (idf from the task's sentences)"),
            _tfidf_rows(pool))
        seconds["tfidf"] = time.perf_counter() - t
        t = time.perf_counter()

        avg = word_vector_average(encoder, pool.texts)
        add(_baseline_model(f"word-avg:{encoder}", "word_avg", encoder, "averaged input word-piece embeddings"),
            pool.rows(lambda p: paired_cosine(avg[p[:, 0]], avg[p[:, 1]])))
        seconds["word_avg"] = time.perf_counter() - t
        add(_baseline_model(encoder, "base", encoder, "the scorer's encoder, mean pooling", pooling="mean"),
            pool.rows(lambda p: paired_cosine(vectors[p[:, 0]], vectors[p[:, 1]]), pooling="mean"))
    return LabelQualityResult(tuple(rows), tuple(models), seconds)


def _baseline_model(model_id: str, method: str, base: str | None, label: str, *, pooling: str | None = None) -> dict:
    return {"model_id": model_id, "method": method, "base_model": base, "path": base or "-", "pooling": pooling,
            "meta": {"label": label}}


def _tfidf_rows(pool: _Pool) -> list[dict[str, Any]]:
    rows = []
    for task, task_pairs in zip(pool.tasks, pool.pairs):
        fit = [pool.texts[i] for i in np.unique(np.concatenate(task_pairs))]
        sims = [tfidf_similarities([pool.texts[i] for i in p[:, 0]], [pool.texts[i] for i in p[:, 1]], fit)
                for p in task_pairs]
        rows += spearman_rows(task, sims)
    return rows


def record_label_quality(catalog: Any, result: LabelQualityResult, *, run_id: str | None = None) -> int:
    """Register the labellers and baselines as models and write their metric rows; returns the row count.

    A base encoder already in the catalog keeps its own model row (only its metrics are updated).
    """
    keys = ("task", "setting", "metric", "value", "n", "pooling")
    for m in result.models:
        known = catalog.query("SELECT method FROM models WHERE model_id = ?", [m["model_id"]])
        if not (known and m["method"] == "base"):
            catalog.register_model(m["model_id"], m["path"], base_model=m["base_model"], method=m["method"],
                                   pooling=m["pooling"], run_id=run_id, meta=m["meta"])
        catalog.record_metrics(m["model_id"], [{k: r[k] for k in keys} for r in result.rows
                                               if r["model_id"] == m["model_id"]], run_id=run_id)
    return len(result.rows)
