"""The one table of evaluation tasks: each STS task's name, files, split and metric, and the one
naming scheme of every figure (``<family>_<split>[_<protocol>][_<mode>]_<metric>``).

The evaluation config, the STS readers, the STS average, the leaderboard and the CLI read this
table; the catalog's ``metric_column`` macro (``sql/100_leaderboard.sql``) writes the same names
(a test compares the two on every task here).

Example:
    >>> STS_TASKS["stsb-dev"].split, STS_TASKS["stsb-dev"].files
    ('dev', ('sts/STSBenchmark/sts-dev.csv',))
    >>> metric_column("revdict-dev", "hybrid", "mrr"), metric_column("sts12", "all", "spearman")
    ('revdict_dev_unseen_hybrid_mrr', 'sts12_test_spearman')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["AVERAGE_COLUMN", "AVERAGE_TASKS", "DEFAULT_TASKS", "DICTIONARY_TASKS", "EVAL_TASKS", "STS_TASKS",
           "StsTaskSpec", "metric_column", "split_group", "task_parts"]

Split = Literal["train", "dev", "trial", "test"]


@dataclass(frozen=True)
class StsTaskSpec:
    """One STS task: its name, files under the data directory, split and headline metric."""

    name: str
    files: tuple[str, ...]          # relative to the data directory (a SemEval year: its folder)
    split: Split
    metric: str = "spearman"        # Spearman x 100 of cosine similarity vs gold, 'all' setting
    default: bool = False           # evaluated when no task list is given
    in_average: bool = False        # one of the seven tasks of the STS average (SentEval 'all')
    subsets: tuple[str, ...] = ()   # a SemEval year's subsets (SentEval's, STS13 without SMT)

    @property
    def column(self) -> str:
        """The figure's name in the leaderboard and the catalog's ``model_scores``."""
        return metric_column(self.name, "all", self.metric)


def _year(n: int, subsets: tuple[str, ...]) -> StsTaskSpec:
    return StsTaskSpec(f"sts{n}", (f"sts/STS{n}-en-test",), "test", default=True, in_average=True, subsets=subsets)


_SICK = "sick/SICK_{}.txt"
_TABLE: tuple[StsTaskSpec, ...] = (
    _year(12, ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    _year(13, ("FNWN", "headlines", "OnWN")),
    _year(14, ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    _year(15, ("answers-forums", "answers-students", "belief", "headlines", "images")),
    _year(16, ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")),
    StsTaskSpec("stsb-train", ("sts/STSBenchmark/sts-train.csv",), "train"),
    StsTaskSpec("stsb-dev", ("sts/STSBenchmark/sts-dev.csv",), "dev", default=True),
    StsTaskSpec("stsb-test", ("sts/STSBenchmark/sts-test.csv",), "test", in_average=True),
    # sickr: SICK-R test; where the test file is absent, the trial file, reported as sickr-trial
    StsTaskSpec("sickr", (_SICK.format("test_annotated"), _SICK.format("trial")), "test", default=True,
                in_average=True),
    StsTaskSpec("sickr-test", (_SICK.format("test_annotated"),), "test"),
    StsTaskSpec("sickr-trial", (_SICK.format("trial"),), "trial"),
    StsTaskSpec("sickr-train", (_SICK.format("train"),), "train"),
)
STS_TASKS: dict[str, StsTaskSpec] = {t.name: t for t in _TABLE}
DICTIONARY_TASKS: tuple[str, ...] = ("revdict", "wordpred")
EVAL_TASKS: tuple[str, ...] = (*STS_TASKS, *DICTIONARY_TASKS)
DEFAULT_TASKS: tuple[str, ...] = tuple(t.name for t in _TABLE if t.default)
AVERAGE_TASKS: tuple[str, ...] = tuple(t.name for t in _TABLE if t.in_average)
AVERAGE_COLUMN = "sts7_test_spearman"   # the mean over the AVERAGE_TASKS present; sts7_test_n: how many

_SPLITS = ("train", "dev", "trial", "test")


def task_parts(task: str) -> tuple[str, str, str | None]:
    """``(family, split, protocol)`` of a recorded task name.

    ``revdict-dev-papers`` -> ``('revdict', 'dev', 'papers')``; a dictionary task without a protocol
    is the ``unseen`` one; a task without a split word is a test task.
    """
    family, *rest = task.split("-")
    split = next((w for w in rest if w in _SPLITS), "test")
    extra = [w for w in rest if w not in _SPLITS]
    protocol = "-".join(extra) if extra else ("unseen" if family in DICTIONARY_TASKS else None)
    return family, split, protocol


def metric_column(task: str, setting: str, metric: str) -> str:
    """The name of one figure: ``<family>_<split>[_<protocol>][_<mode>]_<metric>``.

    ``setting`` is the reverse-dictionary mode (head, cosine, hybrid); STS's ``all`` is left out.
    """
    family, split, protocol = task_parts(task)
    parts = [family, split, protocol, None if setting == "all" else setting, metric]
    return re.sub(r"[^A-Za-z0-9]+", "_", "_".join(p for p in parts if p))


def split_group(task: str) -> Literal["dev", "train", "test"]:
    """Which figures a choice may read: ``dev``; ``train``; everything else is reported (``test``)."""
    split = task_parts(task)[1]
    return split if split in ("dev", "train") else "test"  # type: ignore[return-value]
