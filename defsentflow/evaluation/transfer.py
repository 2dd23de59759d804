"""Transfer tasks: SentEval's logistic-regression probe on frozen sentence vectors.

SentEval's non-PyTorch path (``usepytorch=False``, senteval/tools/validation.py), step for step:

* features: the sentence's vector; for a pair task (SICK-E, MRPC, the supervised STS tasks)
  ``[|u - v|, u * v]`` (senteval/sick.py, mrpc.py: ``np.c_[np.abs(A - B), A * B]``);
* the records in SentEval's order before any fold is drawn: sorted by (token count, label), pairs by
  (tokens of A, tokens of B, label), stable, so ``StratifiedKFold(shuffle=True, random_state=seed)``
  draws SentEval's folds;
* the probe ``LogisticRegression(C=c, random_state=seed)`` with scikit-learn's defaults, ``c`` from
  the task's grid of ``2**t``; a score is ``round(100 * accuracy, 2)`` and the first best wins;
* three schemes: ``inner_kfold`` (train only: MR, CR, SUBJ, MPQA, BBC titles; per outer fold C is
  chosen by an inner k-fold on its training part, the test fold scored; means over folds),
  ``kfold`` (train/test: TREC, MRPC; C by k-fold on train, one fit on train scores test),
  ``split`` (train/dev/test: SST-2, SICK-E; C on dev, test scored when present).

The test split never chooses anything: C is read off dev (or the inner folds) and the test figure is
computed once, at that C. Every sentence of every split is encoded once (duplicates removed) by the
``encode`` callable the caller hands in, so this module knows nothing of how a model is loaded.

The supervised relatedness tasks (``stsb-sup``, ``sickr-sup``) are SentEval's ``RelatednessPytorch``
made deterministic on a CPU: the same 5-way softmax layer on the pair features, trained by Adam
(batch 64, no weight decay) with MSE against Tai et al.'s sparse target distribution, checked every
50 epochs on dev Pearson, stopped after 4 checks without a gain, the best check kept.

How this becomes a task kind (for the coordinator): the kind module is one file that wraps
:func:`run_task`; its registry rows are :data:`transfer_data.TASKS` (name, files, main score, scheme);
its availability is :func:`transfer_data.locate` (raising the one-line "missing" message); its
inputs' hash is the located files' contents plus :meth:`TransferTask.protocol_hash`; its run calls
``run_task(TASKS[name], data_dir, encode)`` with ``encode`` the kind's pooled encoder and files
:class:`TransferResult`'s ``scores`` (``dev_acc``, ``test_acc``, ``f1`` ...) under the task's name.
"""

from __future__ import annotations

import os
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from defsentflow.evaluation.transfer_data import TASKS, Split, TransferTask, load_splits
from defsentflow.evaluation.transfer_regress import regress

__all__ = [
    "Encode",
    "TransferResult",
    "encode_splits",
    "features",
    "inner_kfold_classifier",
    "kfold_classifier",
    "run_task",
    "run_task_seeds",
    "score_vectors",
    "seed_stats",
    "senteval_order",
    "split_classifier",
    "TASKS",
]

Encode = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class TransferResult:
    """One task's figures (x 100, SentEval's rounding) and how they were reached."""

    task: str
    protocol_hash: str
    scores: dict[str, float]  # dev_acc, test_acc (when a test split or fold exists), f1 ...
    chosen_c: tuple[float, ...]  # the C of each outer fold (one for kfold / split)
    n: dict[str, int]  # records per split
    n_unique_sentences: int
    seconds: dict[str, float] = field(default_factory=dict)  # encode, probe
    unconverged: int = 0  # probe fits that stopped at max_iter (SentEval's would stop at the same point)

    @property
    def main(self) -> float:
        """The figure reported first: test when the task has one, else dev (named so by the caller)."""
        t = TASKS.get(self.task)
        key = t.main_score if t else "acc"
        return self.scores.get(f"test_{key}", self.scores.get(f"dev_{key}", float("nan")))


def _pct(x: float) -> float:
    return round(100 * float(x), 2)


def senteval_order(split: Split) -> np.ndarray:
    """The permutation SentEval applies before drawing folds (stable sort by length, then label)."""
    if split.b is None:
        keys = [(len(s.split()), y) for s, y in zip(split.a, split.y.tolist())]
    else:
        keys = [(len(s.split()), len(t.split()), y) for s, t, y in zip(split.a, split.b, split.y.tolist())]
    return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def encode_splits(splits: dict[str, Split], encode: Encode) -> tuple[dict[str, tuple[np.ndarray, ...]], int]:
    """Every distinct sentence of every split encoded in one call; per split its (A[, B]) arrays."""
    texts = sorted({s for sp in splits.values() for s in (*sp.a, *(sp.b or ()))})
    index = {s: i for i, s in enumerate(texts)}
    vecs = np.asarray(encode(texts), dtype=np.float32) if texts else np.zeros((0, 1), np.float32)
    if vecs.shape[0] != len(texts):
        raise ValueError(f"encode returned {vecs.shape[0]} vectors for {len(texts)} sentences")
    out = {}
    for name, sp in splits.items():
        parts = (sp.a,) if sp.b is None else (sp.a, sp.b)
        out[name] = tuple(vecs[[index[s] for s in part]] for part in parts)
    return out, len(texts)


def features(vectors: tuple[np.ndarray, ...]) -> np.ndarray:
    """A sentence's vector, or ``[|u - v|, u * v]`` for a pair (SentEval's SICK and MRPC features)."""
    if len(vectors) == 1:
        return vectors[0]
    u, v = vectors
    return np.c_[np.abs(u - v), u * v]


def _fit(X: np.ndarray, y: np.ndarray, c: float, seed: int):
    from sklearn.linear_model import LogisticRegression  # lazy: scikit-learn loads only where it is used

    return LogisticRegression(C=c, random_state=seed).fit(X, y)


def _folds(X: np.ndarray, y: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold  # lazy: scikit-learn loads only where it is used

    return list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(X, y))


def _cv_scores(X: np.ndarray, y: np.ndarray, regs: Sequence[float], k: int, seed: int) -> list[float]:
    """Per C the mean fold accuracy (x 100, rounded as SentEval rounds it); the folds drawn once."""
    folds = _folds(X, y, k, seed)
    return [_pct(np.mean([_fit(X[tr], y[tr], c, seed).score(X[te], y[te]) for tr, te in folds])) for c in regs]


def split_classifier(train: tuple[np.ndarray, np.ndarray], dev: tuple[np.ndarray, np.ndarray],
                     test: tuple[np.ndarray, np.ndarray] | None, regs: Sequence[float], seed: int
                     ) -> tuple[float, float | None, float, np.ndarray | None]:
    """SentEval's SplitClassifier: C by dev accuracy; (dev acc, test acc or None, C, test predictions)."""
    models = [_fit(*train, c, seed) for c in regs]
    scores = [_pct(m.score(*dev)) for m in models]
    best = int(np.argmax(scores))
    if test is None:
        return scores[best], None, regs[best], None
    return scores[best], _pct(models[best].score(*test)), regs[best], models[best].predict(test[0])


def kfold_classifier(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray],
                     regs: Sequence[float], k: int, seed: int) -> tuple[float, float, float, np.ndarray]:
    """SentEval's KFoldClassifier: C by k-fold on train, one fit on all of train scores test."""
    scores = _cv_scores(*train, regs, k, seed)
    best = int(np.argmax(scores))
    model = _fit(*train, regs[best], seed)
    return scores[best], _pct(model.score(*test)), regs[best], model.predict(test[0])


def inner_kfold_classifier(X: np.ndarray, y: np.ndarray, regs: Sequence[float], k: int, seed: int
                           ) -> tuple[float, float, tuple[float, ...]]:
    """SentEval's InnerKFoldClassifier: per outer fold C by an inner k-fold on its training part.

    Returns (mean best inner accuracy, mean outer test-fold accuracy, the C of each outer fold).
    """
    dev, test, chosen = [], [], []
    for tr, te in _folds(X, y, k, seed):
        scores = _cv_scores(X[tr], y[tr], regs, k, seed)
        best = int(np.argmax(scores))
        dev.append(scores[best])
        chosen.append(regs[best])
        test.append(_pct(_fit(X[tr], y[tr], regs[best], seed).score(X[te], y[te])))
    return round(float(np.mean(dev)), 2), round(float(np.mean(test)), 2), tuple(chosen)


def _xy(vecs: dict[str, tuple[np.ndarray, ...]], splits: dict[str, Split], name: str) -> tuple[np.ndarray, np.ndarray]:
    order = senteval_order(splits[name])
    return features(vecs[name])[order], splits[name].y[order]


def _classify(task: TransferTask, splits: dict[str, Split], vecs: dict) -> tuple[dict[str, float], tuple[float, ...]]:
    regs = [2.0 ** t for t in task.grid]
    train = _xy(vecs, splits, "train")
    if task.scheme == "inner_kfold":
        dev, test, chosen = inner_kfold_classifier(*train, regs, task.kfold, task.seed)
        return {"dev_acc": dev, "test_acc": test}, chosen
    test = _xy(vecs, splits, "test") if "test" in splits else None
    if task.scheme == "kfold":
        dev, acc, c, yhat = kfold_classifier(train, test, regs, task.kfold, task.seed)
    else:
        dev, acc, c, yhat = split_classifier(train, _xy(vecs, splits, "dev"), test, regs, task.seed)
    scores = {"dev_acc": dev} if acc is None else {"dev_acc": dev, "test_acc": acc}
    if "f1" in task.extra_scores and yhat is not None:
        from sklearn.metrics import f1_score  # lazy: scikit-learn loads only where it is used

        scores["test_f1"] = _pct(f1_score(test[1], yhat))
    return scores, (c,)


def score_vectors(task: TransferTask, splits: dict[str, Split], vecs: dict[str, tuple[np.ndarray, ...]]
                  ) -> tuple[dict[str, float], tuple[float, ...]]:
    """The task's probe on its splits' vectors: (scores, the chosen C of each outer fold)."""
    if task.scheme == "regress":  # in SentEval's order too: its epochs permute the sorted records
        return regress(task, {k: _xy(vecs, splits, k) for k in splits}), ()
    return _classify(task, splits, vecs)


def run_task(task: TransferTask | str, data_dir: str | os.PathLike, encode: Encode, *,
             seed: int | None = None) -> TransferResult:
    """Read ``task``'s files, encode every distinct sentence once, run its validation scheme.

    Example:
        >>> r = run_task("mr", "../shared/data", my_encode)  # doctest: +SKIP
        >>> r.scores["test_acc"], r.chosen_c
    """
    task = TASKS[task] if isinstance(task, str) else task
    if seed is not None:
        task = replace(task, seed=seed)
    splits = load_splits(task, data_dir)
    t0 = time.perf_counter()
    vecs, n_unique = encode_splits(splits, encode)
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores, chosen = score_vectors(task, splits, vecs)
    t2 = time.perf_counter()
    unconverged = sum(w.category.__name__ == "ConvergenceWarning" for w in caught)
    for w in caught:
        if w.category.__name__ != "ConvergenceWarning":
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return TransferResult(task.name, task.protocol_hash(), scores, chosen, {k: len(v) for k, v in splits.items()},
                          n_unique, {"encode": round(t1 - t0, 3), "probe": round(t2 - t1, 3)}, unconverged)


def run_task_seeds(task: TransferTask | str, data_dir: str | os.PathLike, encode: Encode,
                   seeds: Sequence[int]) -> list[TransferResult]:
    """The task once per probe seed (its folds move with the seed), each sentence encoded once for all."""
    cache: dict[str, np.ndarray] = {}

    def cached(texts: list[str]) -> np.ndarray:
        todo = [s for s in texts if s not in cache]
        if todo:
            cache.update(zip(todo, encode(todo)))
        return np.stack([cache[s] for s in texts])

    return [run_task(task, data_dir, cached, seed=s) for s in seeds]


def seed_stats(results: Sequence[TransferResult]) -> dict[str, tuple[float, float]]:
    """Mean and sample sd (0 for one run) of each score over runs."""
    keys = results[0].scores
    return {k: (round(statistics.fmean(r.scores[k] for r in results), 2),
                round(statistics.stdev(r.scores[k] for r in results), 2) if len(results) > 1 else 0.0) for k in keys}
