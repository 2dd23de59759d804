"""The transfer tasks' registry rows and their readers: SentEval's formats, SICK, STS-B and BBC titles.

Layout under a data directory (``--data-dir``): a SentEval task's folder is looked for, in this
order, under ``<data-dir>/senteval/``, ``<data-dir>/downstream/`` (``--data-dir`` pointed at
SentEval's ``data/``) and ``<data-dir>/data/downstream/`` (pointed at a SentEval checkout), with
SentEval's own sub-folders and file names (``MR/rt-polarity.pos``, ``SST/binary/sentiment-train``,
``TREC/train_5500.label`` ...). SICK also reads the shared data's ``<data-dir>/sick/`` and STS-B its
``<data-dir>/sts/STSBenchmark/``; BBC titles read ``<data-dir>/corpus/bbc/<topic>/*.txt`` (the first
line of each article). The first folder holding every required file wins; when none does,
:class:`TransferDataMissing` names the missing files and every folder looked in, in one line.

Each reader reads its file as SentEval's ``senteval/<task>.py`` does (same columns, encodings and
labels; a sentence is its whitespace tokens joined by one space, which is what SentEval's
``split()`` hands a batcher that joins them) and raises :class:`TransferFormatError` naming the
file and line of the first malformed record.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from defsentflow.evaluation.sts_data import StsFormatError, load_stsb

__all__ = [
    "SENTEVAL_ROOTS",
    "TASKS",
    "Split",
    "TransferDataMissing",
    "TransferFormatError",
    "TransferTask",
    "available_tasks",
    "load_splits",
    "locate",
]

Scheme = Literal["inner_kfold", "kfold", "split", "regress"]
Reader = Literal["binary", "sst", "trec", "mrpc", "sick_e", "sick_r", "stsb", "bbc"]
SENTEVAL_ROOTS = ("senteval", "downstream", "data/downstream")
TREC_LABELS = {"ABBR": 0, "DESC": 1, "ENTY": 2, "HUM": 3, "LOC": 4, "NUM": 5}  # senteval/trec.py
SICK_LABELS = {"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2}  # senteval/sick.py


class TransferFormatError(ValueError):
    """A malformed record in a transfer task's file (the message names the file and line)."""


class TransferDataMissing(FileNotFoundError):
    """A task's files are not under the data directory (the message lists them and where it looked)."""


@dataclass(frozen=True)
class TransferTask:
    """One transfer task: its files, its validation scheme and every setting its figure depends on.

    Example:
        >>> TASKS["mr"].scheme, TASKS["mr"].grid, TASKS["mr"].kfold
        ('inner_kfold', (-2, -1, 0, 1, 2, 3), 10)
    """

    name: str
    reader: Reader
    folder: str  # SentEval's folder under data/downstream/ ("" for a task SentEval has not)
    files: tuple[tuple[str, str], ...]  # (split, file name); binary tasks: ("pos", ...), ("neg", ...)
    scheme: Scheme
    main_score: str = "acc"
    pairs: bool = False  # features [|u - v|, u * v] of the two sentences' vectors (senteval/sick.py, mrpc.py)
    grid: tuple[int, ...] = (-2, -1, 0, 1, 2, 3)  # C = 2**t (senteval/tools/validation.py, sklearn path)
    kfold: int = 10  # SentEval README's default config for comparable results ('kfold': 10)
    seed: int = 1111  # SentEval's default params.seed
    optional: tuple[str, ...] = ()  # splits read when present (the held-back test splits)
    extra_folders: tuple[str, ...] = ()  # the shared data's own folders for the same files
    paper: bool = True  # counted in a paper average (BBC titles never are)
    extra_scores: tuple[str, ...] = field(default=())

    def protocol(self) -> dict:
        """Every setting the figure depends on, beyond the model and the data files."""
        keys = ("reader", "scheme", "main_score", "pairs", "grid", "seed")
        out = {k: v for k, v in asdict(self).items() if k in keys}
        out["features"] = "abs_diff,prod" if self.pairs else "vector"
        if self.scheme in ("inner_kfold", "kfold"):
            out["kfold"] = self.kfold
        out["probe"] = PROBE
        return out

    def protocol_hash(self) -> str:
        """12 hex digits of the protocol: a changed grid, fold count, seed or feature rule changes it."""
        text = json.dumps(self.protocol(), sort_keys=True, default=list)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def candidate_dirs(self, data_dir: str | os.PathLike) -> list[Path]:
        root = Path(data_dir)
        dirs = [root / r / self.folder for r in SENTEVAL_ROOTS] if self.folder else []
        return dirs + [root / f for f in self.extra_folders]


# The probe itself (scikit-learn's LogisticRegression with its defaults, SentEval's non-PyTorch
# path): part of every protocol hash, so a changed probe never reuses a stored figure.
PROBE = "sklearn-LogisticRegression(C, random_state=seed); lbfgs; max_iter=100"
KFOLD_GRID = (-1, 0, 1, 2, 3, 4, 5)  # KFoldClassifier's sklearn grid (TREC, MRPC): 2**t, t in -1..5


def _binary(name: str, folder: str, pos: str, neg: str) -> TransferTask:
    return TransferTask(name, "binary", folder, (("pos", pos), ("neg", neg)), "inner_kfold")


_ROWS = (
    _binary("mr", "MR", "rt-polarity.pos", "rt-polarity.neg"),
    _binary("cr", "CR", "custrev.pos", "custrev.neg"),
    # SentEval's SUBJ hands the objective sentences in as label 1 (senteval/binary.py)
    _binary("subj", "SUBJ", "subj.objective", "subj.subjective"),
    _binary("mpqa", "MPQA", "mpqa.pos", "mpqa.neg"),
    TransferTask("sst2", "sst", "SST/binary", (("train", "sentiment-train"), ("dev", "sentiment-dev"),
                                              ("test", "sentiment-test")), "split"),
    TransferTask("trec", "trec", "TREC", (("train", "train_5500.label"), ("test", "TREC_10.label")), "kfold",
                 grid=KFOLD_GRID),
    TransferTask("mrpc", "mrpc", "MRPC", (("train", "msr_paraphrase_train.txt"), ("test", "msr_paraphrase_test.txt")),
                 "kfold", pairs=True, grid=KFOLD_GRID, extra_scores=("f1",)),
    TransferTask("sick-e", "sick_e", "SICK", (("train", "SICK_train.txt"), ("dev", "SICK_trial.txt"),
                                              ("test", "SICK_test_annotated.txt")), "split", pairs=True,
                 optional=("test",), extra_folders=("sick",)),
    TransferTask("sickr-sup", "sick_r", "SICK", (("train", "SICK_train.txt"), ("dev", "SICK_trial.txt"),
                                                 ("test", "SICK_test_annotated.txt")), "regress", main_score="pearson",
                 pairs=True, grid=(), optional=("test",), extra_folders=("sick",), extra_scores=("spearman",)),
    TransferTask("stsb-sup", "stsb", "STS/STSBenchmark", (("train", "sts-train.csv"), ("dev", "sts-dev.csv"),
                                                          ("test", "sts-test.csv")), "regress", main_score="pearson",
                 pairs=True, grid=(), optional=("test",), extra_folders=("sts/STSBenchmark",),
                 extra_scores=("spearman",)),
    # not a SentEval task: BBC article titles -> one of five topics, SentEval's train-only protocol
    TransferTask("bbc-topics", "bbc", "", (), "inner_kfold", extra_folders=("corpus/bbc",), paper=False),
)
TASKS: dict[str, TransferTask] = {t.name: t for t in _ROWS}


@dataclass(frozen=True)
class Split:
    """One split's records: sentences (and second sentences for a pair task), labels, source file(s)."""

    a: tuple[str, ...]
    y: np.ndarray  # int64 class ids, or float64 gold scores for a regression task
    source: str
    b: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.y)


def available_tasks(data_dir: str | os.PathLike) -> list[str]:
    """The names of the tasks whose required files are all under ``data_dir``."""
    out = []
    for name, task in TASKS.items():
        try:
            locate(task, data_dir)
        except TransferDataMissing:
            continue
        out.append(name)
    return out


def locate(task: TransferTask, data_dir: str | os.PathLike) -> dict[str, Path]:
    """The task's files by split: the first candidate folder holding every required one."""
    dirs = task.candidate_dirs(data_dir)
    if task.reader == "bbc":
        for d in dirs:
            if d.is_dir() and any(p.is_dir() for p in d.iterdir()):
                return {"train": d}
        raise TransferDataMissing(f"{task.name}: missing the topic folders <topic>/*.txt "
                                  f"(looked in {', '.join(map(str, dirs))})")
    required = [f for s, f in task.files if s not in task.optional]
    for d in dirs:
        if all((d / f).is_file() for f in required):
            return {s: d / f for s, f in task.files if (d / f).is_file()}
    missing = sorted({f for d in dirs for f in required if not (d / f).is_file()})
    raise TransferDataMissing(f"{task.name}: missing {', '.join(missing)} (looked in {', '.join(map(str, dirs))})")


def _norm(text: str) -> str:
    return " ".join(text.split())


def _lines(path: Path, encoding: str) -> list[str]:
    data = path.read_bytes()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TransferFormatError(f"{path}:{line}: not valid {encoding} ({exc.reason})") from None
    # "\n" only: SentEval's binary tasks use str.splitlines, which also cuts at \x85 or \x0b inside a
    # line; MR's 10,662 records (5,331 lines a file) say its files have none, and a cut would leave
    # an empty record, which is refused here
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln.rstrip("\r") for ln in lines]


def _sentence(path: Path, no: int, text: str, what: str = "sentence") -> str:
    out = _norm(text)
    if not out:
        raise TransferFormatError(f"{path}:{no}: empty {what}")
    return out


def _label(path: Path, no: int, value: str, labels: dict[str, int] | tuple[int, ...]) -> int:
    if isinstance(labels, dict):
        if value not in labels:
            raise TransferFormatError(f"{path}:{no}: label {value!r} is not one of {', '.join(labels)}")
        return labels[value]
    try:
        out = int(value)
    except ValueError:
        out = None
    if out not in labels:
        raise TransferFormatError(f"{path}:{no}: label {value!r} is not one of {', '.join(map(str, labels))}")
    return out


def _fields(path: Path, no: int, line: str, need: int, sep: str = "\t") -> list[str]:
    row = line.strip().split(sep)
    if len(row) < need:
        raise TransferFormatError(f"{path}:{no}: expected at least {need} tab-separated fields, got {len(row)}")
    return row


def _split(a: list[str], y: list, source: str, b: list[str] | None = None, dtype=np.int64) -> Split:
    return Split(tuple(a), np.asarray(y, dtype=dtype), source, None if b is None else tuple(b))


def read_binary(pos: Path, neg: Path) -> Split:
    """MR, CR, SUBJ, MPQA (senteval/binary.py): one sentence a line, latin-1; ``pos`` lines are 1."""
    a, y = [], []
    for path, label in ((pos, 1), (neg, 0)):
        for no, line in enumerate(_lines(path, "latin-1"), 1):
            a.append(_sentence(path, no, line))
            y.append(label)
    return _split(a, y, f"{pos},{neg}")


def read_sst(path: Path) -> Split:
    """SST-2 (senteval/sst.py, binary): ``sentence<TAB>label`` with label 0 or 1, UTF-8."""
    a, y = [], []
    for no, line in enumerate(_lines(path, "utf-8"), 1):
        row = _fields(path, no, line, 2)
        y.append(_label(path, no, row[1], (0, 1)))
        a.append(_sentence(path, no, row[0]))
    return _split(a, y, str(path))


def read_trec(path: Path) -> Split:
    """TREC (senteval/trec.py): ``COARSE:fine question``, latin-1; the six coarse labels are the classes."""
    a, y = [], []
    for no, line in enumerate(_lines(path, "latin-1"), 1):
        target, sep, rest = line.strip().partition(":")
        question = rest.split(" ", 1)
        if not sep or len(question) < 2:
            raise TransferFormatError(f"{path}:{no}: expected 'COARSE:fine question', got {line[:60]!r}")
        y.append(_label(path, no, target, TREC_LABELS))
        a.append(_sentence(path, no, question[1], "question"))
    return _split(a, y, str(path))


def read_mrpc(path: Path) -> Split:
    """MRPC (senteval/mrpc.py): a header, then ``Quality, #1 ID, #2 ID, #1 String, #2 String``, UTF-8."""
    a, b, y = [], [], []
    for no, line in enumerate(_lines(path, "utf-8")[1:], 2):
        row = _fields(path, no, line, 5)
        y.append(_label(path, no, row[0], (0, 1)))
        a.append(_sentence(path, no, row[3]))
        b.append(_sentence(path, no, row[4]))
    return _split(a, y, str(path), b)


def read_sick(path: Path, column: Literal["entailment_judgment", "relatedness_score"]) -> Split:
    """A SICK split (senteval/sick.py): tab-separated with a header; columns found by their names."""
    lines = _lines(path, "utf-8")
    header = lines[0].split("\t") if lines else []
    need = ("sentence_A", "sentence_B", column)
    if any(c not in header for c in need):
        raise TransferFormatError(f"{path}:1: header lacks {[c for c in need if c not in header]}; found {header}")
    ia, ib, iy = (header.index(c) for c in need)
    a, b, y = [], [], []
    for no, line in enumerate(lines[1:], 2):
        row = _fields(path, no, line, max(ia, ib, iy) + 1)
        if column == "entailment_judgment":
            y.append(_label(path, no, row[iy], SICK_LABELS))
        else:
            y.append(_score(path, no, row[iy]))
        a.append(_sentence(path, no, row[ia]))
        b.append(_sentence(path, no, row[ib]))
    return _split(a, y, str(path), b, np.int64 if column == "entailment_judgment" else np.float64)


def _score(path: Path, no: int, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise TransferFormatError(f"{path}:{no}: score {value!r} is not a number") from None


def read_stsb(path: Path) -> Split:
    """An STS Benchmark split (senteval/sts.py): fields 4, 5, 6 (score, s1, s2) of a tab-separated line."""
    try:
        sub = load_stsb(path).subsets[0]
    except StsFormatError as exc:
        raise TransferFormatError(str(exc)) from None
    return _split(list(sub.sentences1), sub.scores, str(path), list(sub.sentences2), np.float64)


def read_bbc(root: Path) -> Split:
    """BBC titles: ``<root>/<topic>/*.txt``, the first line of each article; topics in sorted order."""
    a, y = [], []
    topics = sorted(p for p in root.iterdir() if p.is_dir())
    for label, topic in enumerate(topics):
        for path in sorted(topic.glob("*.txt")):
            first = path.read_bytes().split(b"\n", 1)[0]
            try:  # only the title is read: the body of one shared article has a stray non-UTF-8 byte
                title = first.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TransferFormatError(f"{path}:1: not valid utf-8 ({exc.reason})") from None
            a.append(_sentence(path, 1, title, "title"))
            y.append(label)
    return _split(a, y, str(root))


def load_splits(task: TransferTask, data_dir: str | os.PathLike) -> dict[str, Split]:
    """Read every split of ``task`` found under ``data_dir`` (``train`` for a train-only task)."""
    paths = locate(task, data_dir)
    if task.reader == "binary":
        return {"train": read_binary(paths["pos"], paths["neg"])}
    if task.reader == "bbc":
        return {"train": read_bbc(paths["train"])}
    readers = {"sst": read_sst, "trec": read_trec, "mrpc": read_mrpc, "stsb": read_stsb,
               "sick_e": lambda p: read_sick(p, "entailment_judgment"),
               "sick_r": lambda p: read_sick(p, "relatedness_score")}
    return {split: readers[task.reader](path) for split, path in paths.items()}
