"""Readers for the STS evaluation sets: SemEval STS12-16 (SentEval layout), STS-B and SICK-R.

Layouts under a data directory (``../shared/data`` by default):

* ``sts/STS1X-en-test/STS.input.<subset>.txt`` (two tab-separated sentences per line) and
  ``STS.gs.<subset>.txt`` (one gold score per line; an empty line means the pair is unscored and is
  skipped, as SentEval does);
* ``sts/STSBenchmark/sts-{train,dev,test}.csv``: tab-separated genre, file, year, id, score, s1, s2.
  Some lines of the public files carry extra tab fields after s2 and stray quotes, so the file is read
  with ``csv.QUOTE_NONE`` and only fields 4, 5, 6 are used;
* ``sick/SICK_{train,trial,test_annotated}.txt``: tab-separated with a header naming
  ``pair_ID, sentence_A, sentence_B, relatedness_score, ...``; columns are found by name.

Sentences are whitespace-normalised (``" ".join(s.split())``), which is what SentEval's
tokenise-then-join does, so scores match SentEval/SimCSE evaluations.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import numpy as np

from defsentflow.config_tools import SickSplit
from defsentflow.eval_tasks import STS_TASKS as TABLE

__all__ = [
    "SickSplit",
    "StsFormatError",
    "StsSubset",
    "StsTask",
    "STS_YEARS",
    "TASKS",
    "available_tasks",
    "load_sick",
    "load_stsb",
    "load_sts_year",
    "load_task",
    "sts_root",
    "task_files",
    "validate_tasks",
]

# Folder and file names, read off the one task table (defsentflow/eval_tasks.py).
STS_YEARS: dict[str, tuple[str, tuple[str, ...]]] = {
    t.name: (t.files[0].split("/", 1)[1], t.subsets) for t in TABLE.values() if t.subsets}
STSB_FILES = {t.name: t.files[0].rsplit("/", 1)[1] for t in TABLE.values() if t.format == "stsb"}
SICK_FILES = {t.split: t.files[0].rsplit("/", 1)[1] for t in TABLE.values() if t.format == "sick" and "-" in t.name}

# Every task name the evaluator accepts. ``sickr`` is SICK-R test; when the test split is absent
# (it is held back on the development machine) ``sick_split="auto"`` falls back to trial and the
# result is reported under the split actually used (``sickr-trial``).
TASKS: tuple[str, ...] = tuple(TABLE)


class StsFormatError(ValueError):
    """A malformed line in an evaluation file (the message names the file and line)."""


@dataclass(frozen=True)
class StsSubset:
    """Scored sentence pairs from one file (or one subset of a SemEval year)."""

    name: str
    sentences1: tuple[str, ...]
    sentences2: tuple[str, ...]
    scores: np.ndarray  # float64 [n]
    source: str  # the file the pairs came from
    skipped: int = 0  # pairs without a gold score

    def __len__(self) -> int:
        return len(self.scores)


@dataclass(frozen=True)
class StsTask:
    """One evaluation task: a SemEval year (several subsets), STS-B split or SICK-R split."""

    name: str
    subsets: tuple[StsSubset, ...]

    @property
    def n(self) -> int:
        return sum(len(s) for s in self.subsets)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(s.source for s in self.subsets)


def _norm(s: str) -> str:
    return " ".join(s.split())


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise StsFormatError(f"{path}:{line}: not valid UTF-8 ({exc.reason})") from exc
    # split on "\n" only: str.splitlines would also cut at \x0b, \x1c, \u2028 inside a sentence
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln.rstrip("\r") for ln in lines]


def sts_root(data_dir: str | os.PathLike) -> Path:
    """``<data_dir>/sts`` when present, else ``data_dir`` itself (a directory of STS folders)."""
    d = Path(data_dir)
    return d / "sts" if (d / "sts").is_dir() else d


def sick_root(data_dir: str | os.PathLike) -> Path:
    d = Path(data_dir)
    return d / "sick" if (d / "sick").is_dir() else d


def load_sts_year(year_dir: str | os.PathLike, subsets: tuple[str, ...], *, task: str = "") -> StsTask:
    """Read one SemEval year in the SentEval layout; pairs with an empty gold line are skipped."""
    year_dir = Path(year_dir)
    out = []
    for sub in subsets:
        inp, gs = year_dir / f"STS.input.{sub}.txt", year_dir / f"STS.gs.{sub}.txt"
        for f in (inp, gs):
            if not f.is_file():
                raise FileNotFoundError(f"STS file not found: {f}")
        pairs, golds = _read_lines(inp), _read_lines(gs)
        if len(pairs) != len(golds):
            raise StsFormatError(f"{inp}: {len(pairs)} sentence pairs but {gs} has {len(golds)} gold lines")
        s1, s2, scores = [], [], []
        skipped = 0
        for i, (pair, gold) in enumerate(zip(pairs, golds), start=1):
            if gold.strip() == "":
                skipped += 1
                continue
            fields = pair.split("\t")
            if len(fields) < 2:
                raise StsFormatError(f"{inp}:{i}: expected two tab-separated sentences, got {len(fields)} field(s)")
            try:
                score = float(gold)
            except ValueError:
                raise StsFormatError(f"{gs}:{i}: gold score {gold!r} is not a number") from None
            s1.append(_norm(fields[0]))
            s2.append(_norm(fields[1]))
            scores.append(score)
        out.append(StsSubset(sub, tuple(s1), tuple(s2), np.asarray(scores, dtype=np.float64), str(inp), skipped))
    return StsTask(task or year_dir.name, tuple(out))


def load_stsb(path: str | os.PathLike, *, task: str = "") -> StsTask:
    """Read an STS Benchmark split (``sts-dev.csv`` format); extra trailing fields are ignored."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"STS-B file not found: {path}")
    s1, s2, scores = [], [], []
    with open(path, encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or row == [""]:
                continue
            if len(row) < 7:
                raise StsFormatError(f"{path}:{i}: expected at least 7 tab-separated fields "
                                     f"(genre, file, year, id, score, s1, s2), got {len(row)}")
            try:
                score = float(row[4])
            except ValueError:
                raise StsFormatError(f"{path}:{i}: score {row[4]!r} is not a number") from None
            s1.append(_norm(row[5]))
            s2.append(_norm(row[6]))
            scores.append(score)
    sub = StsSubset(path.stem, tuple(s1), tuple(s2), np.asarray(scores, dtype=np.float64), str(path))
    return StsTask(task or path.stem, (sub,))


def load_sick(path: str | os.PathLike, *, task: str = "") -> StsTask:
    """Read a SICK split; columns ``sentence_A``, ``sentence_B``, ``relatedness_score`` by header name."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SICK file not found: {path}")
    lines = _read_lines(path)
    if not lines:
        raise StsFormatError(f"{path}:1: empty file (expected a header line)")
    header = lines[0].split("\t")
    need = ("sentence_A", "sentence_B", "relatedness_score")
    missing = [c for c in need if c not in header]
    if missing:
        raise StsFormatError(f"{path}:1: header lacks column(s) {missing}; found {header}")
    ia, ib, ir = (header.index(c) for c in need)
    width = max(ia, ib, ir) + 1
    s1, s2, scores = [], [], []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        row = line.split("\t")
        if len(row) < width:
            raise StsFormatError(f"{path}:{i}: expected at least {width} tab-separated fields, got {len(row)}")
        try:
            score = float(row[ir])
        except ValueError:
            raise StsFormatError(f"{path}:{i}: relatedness_score {row[ir]!r} is not a number") from None
        s1.append(_norm(row[ia]))
        s2.append(_norm(row[ib]))
        scores.append(score)
    sub = StsSubset(path.stem, tuple(s1), tuple(s2), np.asarray(scores, dtype=np.float64), str(path))
    return StsTask(task or path.stem, (sub,))


def _sick_path(data_dir: str | os.PathLike, split: str) -> tuple[str, Path]:
    """The (split, file) for a SICK-R request; ``auto`` is test when present, else trial."""
    root = sick_root(data_dir)
    if split == "auto":
        for cand in ("test", "trial"):
            if (root / SICK_FILES[cand]).is_file():
                return cand, root / SICK_FILES[cand]
        return "test", root / SICK_FILES["test"]
    return split, root / SICK_FILES[split]


def validate_tasks(tasks: str | list[str] | tuple[str, ...]) -> list[str]:
    """Split a comma list, drop duplicates, and reject unknown names with the list of valid ones."""
    names = [t.strip() for t in (tasks.split(",") if isinstance(tasks, str) else tasks) if t.strip()]
    bad = [t for t in names if t not in TASKS]
    if bad:
        raise ValueError(f"unknown STS task(s) {bad}; valid: {', '.join(TASKS)}")
    return list(dict.fromkeys(names))


def _path(data_dir: str | os.PathLike, rel: str) -> Path:
    """A task row's file (``sts/...`` or ``sick/...``) under ``data_dir`` (or the folder of those folders)."""
    top, rest = rel.split("/", 1)
    return (sick_root(data_dir) if top == "sick" else sts_root(data_dir)) / rest


def _sick_split(task: str, sick_split: SickSplit) -> str:
    if sick_split not in get_args(SickSplit):
        raise ValueError(f"sick_split must be one of {get_args(SickSplit)}, got {sick_split!r}")
    return task.split("-", 1)[1] if "-" in task else sick_split


def _meta(task: str) -> Any:
    if task not in TABLE:
        raise ValueError(f"unknown STS task {task!r}; valid: {', '.join(TASKS)}")
    return TABLE[task]


def load_task(data_dir: str | os.PathLike, task: str, *, sick_split: SickSplit = "auto") -> StsTask:
    """Load one task by name, read as its task row's ``format`` says.

    ``sickr`` uses ``sick_split`` (``auto``: the test split when present, else trial); the returned
    task is named after the split actually read (``sickr`` for test, ``sickr-trial`` ...), so a
    result is never filed under a split it did not come from.
    """
    meta = _meta(task)
    if meta.format == "semeval":
        return load_sts_year(_path(data_dir, meta.files[0]), meta.subsets, task=task)
    if meta.format == "sick":
        split, path = _sick_path(data_dir, _sick_split(task, sick_split))
        return load_sick(path, task="sickr" if split == "test" else f"sickr-{split}")
    return load_stsb(_path(data_dir, meta.files[0]), task=task)


def task_files(data_dir: str | os.PathLike, task: str, *, sick_split: SickSplit = "auto") -> list[Path]:
    """The files :func:`load_task` reads for ``task`` (for content hashing; they may not exist)."""
    meta = _meta(task)
    if meta.format == "semeval":
        root = _path(data_dir, meta.files[0])
        return [root / f"STS.{k}.{s}.txt" for s in meta.subsets for k in ("input", "gs")]
    if meta.format == "sick":
        return [_sick_path(data_dir, _sick_split(task, sick_split))[1]]
    return [_path(data_dir, meta.files[0])]


def available_tasks(data_dir: str | os.PathLike) -> list[str]:
    """Task names whose files exist under ``data_dir`` (``sickr`` only with the SICK test split)."""
    out = [t for t, meta in TABLE.items() if meta.format != "sick" and all(f.is_file() for f in task_files(data_dir, t))]
    sick = sick_root(data_dir)
    for split in ("test", "trial", "train"):
        if (sick / SICK_FILES[split]).is_file():
            out.append("sickr" if split == "test" else f"sickr-{split}")
    return out
