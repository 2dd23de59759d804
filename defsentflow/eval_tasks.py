"""The one registry of evaluation tasks' metadata, and the one naming scheme of every figure.

Each task is declared once, as mteb declares a task with its ``TaskMetadata``: its name, kind, the
splits it reads, its main metric (the leaderboard's figure), the query protocols and candidate
sets it serves, its files and whether it is one of the seven tasks of the STS average. The
evaluation config, the STS readers, the task kinds (:mod:`defsentflow.evaluation.kinds`), the
leaderboard and the CLI read this table, and so does the catalog: :func:`registry_ddl` renders it
(and the naming macros) as SQL that the catalog applies with its DDL files, so the SQL views read
the STS average's members and each family's main metric from here, never from a copy.

A figure's name carries every setting that changes its value:
``<family>_<split>[_<protocol>][_<variant>...][_<mode>]_<metric>``. The recorded task name is
``<family>[-<split>][-<protocol word>][+<variant token>...]``: a variant token says that one of
the settings of :class:`FigureSettings` had a value other than its canonical one (``q500``: at
most 500 queries; ``splitcands``: the split's entries as candidates; ``tiesmid``: mid ranks for
ties; ``len64``: 64 tokens; ``bf16``), so an evaluation with other settings adds a column instead
of overwriting one.

Example:
    >>> STS_TASKS["stsb-dev"].split, STS_TASKS["stsb-dev"].files
    ('dev', ('sts/STSBenchmark/sts-dev.csv',))
    >>> metric_column("revdict-dev", "hybrid", "mrr"), metric_column("sts12", "all", "spearman")
    ('revdict_dev_unseen_hybrid_mrr', 'sts12_test_spearman')
    >>> dictionary_task("revdict", "test", "unseen", FigureSettings(max_queries=500, candidates="split"))
    'revdict+q500+splitcands'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

__all__ = ["AVERAGE_COLUMN", "AVERAGE_TASK", "AVERAGE_TASKS", "CANONICAL", "DEFAULT_TASKS", "DICTIONARY_TASKS", "HEAD_TOKENS",
           "EVAL_TASKS", "PROTOCOLS", "SPLITS", "STS_TASKS", "TASKS", "TIE_RULES", "TRANSFER_GROUP", "FigureSettings", "Protocol",
           "ProtocolSpec", "TaskMetadata", "TaskParts", "TieRule", "VARIANT_SEP", "dictionary_task", "metric_column", "registry_ddl",
           "split_group", "task_parts", "with_variant", "without_head", "SELECTION_METRICS", "SelectionMetric"]

Split = Literal["train", "dev", "trial", "test"]
SPLITS: tuple[str, ...] = ("train", "dev", "trial", "test")
# which definitions are queries (see ProtocolSpec and defsentflow/evaluation/protocols.py)
Protocol = Literal["unseen", "all-definitions", "multi-definition"]
# how a gold entry tied with others is ranked: after every entry with an equal score (the papers'
# reference ranks an all-equal row last in effect), in the middle of them, or before them
TieRule = Literal["pessimistic", "mid", "optimistic"]
TIE_RULES: tuple[str, ...] = ("pessimistic", "mid", "optimistic")
VARIANT_SEP = "+"


@dataclass(frozen=True)
class ProtocolSpec:
    """Which definitions of a split are queries; one meaning for every dictionary task."""

    name: str
    word: str               # in task names (``revdict-dev-multidef``); the default protocol's is left out
    unseen_only: bool       # drop a definition whose text the model trained on (counted as excluded)
    min_definitions: int    # the entry's definitions in the query split (leave-one-out needs 2)
    capped: bool            # at most ``max_queries`` queries (a deterministic sample)
    description: str


PROTOCOLS: dict[str, ProtocolSpec] = {p.name: p for p in (
    ProtocolSpec("unseen", "unseen", True, 2, True,
                 "definitions of the split whose text the model never trained on, of entries with at least two "
                 "definitions in the split, in a fixed hash order, the first max_queries"),
    ProtocolSpec("multi-definition", "multidef", False, 2, False,
                 "every definition of the split of an entry with at least two definitions in the split, seen or not"),
    ProtocolSpec("all-definitions", "alldefs", False, 1, False,
                 "every definition of the split, seen or not (DefSent's Table 2)"),
)}


@dataclass(frozen=True)
class FigureSettings:
    """The settings besides the model, pooling, task, split, protocol and mode that change a figure's
    value, at their canonical values. A figure computed with another value carries a variant token
    (:meth:`tokens`); pooling is a column of every metric row, the mode its ``setting``."""

    max_length: int = 256               # tokens per text
    autocast: str = "none"              # mixed precision
    max_queries: int | None = 2000      # a capped protocol's sample size (None: every query)
    candidates: str = "all"             # the reverse dictionary's candidate entries: all | split
    ties: TieRule = "pessimistic"       # dictionary tasks' rank of a tied gold entry

    def tokens(self, kind: str, protocol: str | None = None, *, candidates: bool = False) -> tuple[str, ...]:
        """The variant tokens of a figure of ``kind`` (``sts`` or ``dictionary``) under ``protocol``;
        ``candidates``: the task has a candidate-set choice (the reverse dictionary)."""
        out = []
        if kind == "dictionary":
            if protocol is not None and PROTOCOLS[protocol].capped and self.max_queries != CANONICAL.max_queries:
                out.append(f"q{self.max_queries or 'all'}")
            if candidates and self.candidates != CANONICAL.candidates:
                out.append(f"{self.candidates}cands")
            if self.ties != CANONICAL.ties:
                out.append({"mid": "tiesmid", "optimistic": "tiesopt"}[self.ties])
        if self.max_length != CANONICAL.max_length:
            out.append(f"len{self.max_length}")
        if self.autocast != CANONICAL.autocast:
            out.append(self.autocast)
        return tuple(out)


CANONICAL = FigureSettings()


@dataclass(frozen=True)
class TaskMetadata:
    """One evaluation task: what it reads, how its figures are named and which one leads.

    Example:
        >>> TASKS["revdict"].main_metric, TASKS["revdict"].protocols
        ('mrr', ('unseen', 'multi-definition'))
    """

    name: str
    kind: Literal["sts", "dictionary", "transfer"]
    splits: tuple[Split, ...]       # STS: the one split its files are; dictionary: the query splits it can read;
                                    # transfer: the splits it reads (a train-only task: its folds' figures)
    main_metric: str                # the leaderboard's figure of the task (its headline)
    main_setting: str | None = "all"  # STS: the 'all' setting; None: every setting (a dictionary task's modes)
    protocols: tuple[str, ...] = ()   # dictionary: the query protocols it serves, the default first
    candidates: tuple[str, ...] = ()  # the candidate sets it can rank (the reverse dictionary: all, split)
    files: tuple[str, ...] = ()       # STS: relative to the data directory (a SemEval year: its folder); transfer:
                                      # SentEval's, under its data/downstream/ (evaluation/transfer_data.py looks)
    format: Literal["semeval", "stsb", "sick"] | None = None  # STS: how its files are read (evaluation/sts_data.py)
    default: bool = False             # evaluated when no task list is given
    in_average: bool = False          # one of the seven tasks of the STS average (SentEval's 'all')
    subsets: tuple[str, ...] = field(default=())  # a SemEval year's subsets (SentEval's, STS13 without SMT)
    description: str = ""
    also_metrics: tuple[str, ...] = ()  # second figures the leaderboard shows after the headline one

    @property
    def family(self) -> str:
        return self.name.split("-")[0]

    @property
    def split(self) -> str:
        """An STS task's split (a dictionary task: its reported split, test)."""
        return self.splits[0] if self.kind == "sts" else "test"

    @property
    def metric(self) -> str:
        return self.main_metric

    @property
    def default_protocol(self) -> str | None:
        return self.protocols[0] if self.protocols else None

    @property
    def column(self) -> str:
        """The main figure's name in the leaderboard (STS: the 'all' setting)."""
        return metric_column(self.name, self.main_setting or "all", self.main_metric)


def _year(n: int, subsets: tuple[str, ...]) -> TaskMetadata:
    return TaskMetadata(f"sts{n}", "sts", ("test",), "spearman", files=(f"sts/STS{n}-en-test",), default=True,
                        in_average=True, subsets=subsets, format="semeval")


def _sts(name: str, split: Split, *files: str, default: bool = False, in_average: bool = False) -> TaskMetadata:
    return TaskMetadata(name, "sts", (split,), "spearman", files=files, default=default, in_average=in_average,
                        format="sick" if name.startswith("sickr") else "stsb")


def _transfer(name: str, splits: tuple[Split, ...], metric: str, *files: str, also: tuple[str, ...] = ()) -> TaskMetadata:
    return TaskMetadata(name, "transfer", splits, metric, files=files, also_metrics=also)


TRANSFER_GROUP = "transfer"  # ``--tasks transfer``: every transfer task whose files are present
_SICK = "sick/SICK_{}.txt"
_TABLE: tuple[TaskMetadata, ...] = (
    _year(12, ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    _year(13, ("FNWN", "headlines", "OnWN")),
    _year(14, ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    _year(15, ("answers-forums", "answers-students", "belief", "headlines", "images")),
    _year(16, ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")),
    _sts("stsb-train", "train", "sts/STSBenchmark/sts-train.csv"),
    _sts("stsb-dev", "dev", "sts/STSBenchmark/sts-dev.csv", default=True),
    _sts("stsb-test", "test", "sts/STSBenchmark/sts-test.csv", in_average=True),
    # sickr: SICK-R test; where the test file is absent, the trial file, reported as sickr-trial
    _sts("sickr", "test", _SICK.format("test_annotated"), _SICK.format("trial"), default=True, in_average=True),
    _sts("sickr-test", "test", _SICK.format("test_annotated")),
    _sts("sickr-trial", "trial", _SICK.format("trial")),
    _sts("sickr-train", "train", _SICK.format("train")),
    TaskMetadata("revdict", "dictionary", ("dev", "test"), "mrr", None, ("unseen", "multi-definition"),
                 ("all", "split"), description="reverse dictionary: rank every candidate entry for a definition "
                                               "(leave-one-out entry vectors; modes head, cosine, hybrid)"),
    # headline MRR@10 as DefSent's Table 2 (its reference get_mrr); full-rank MRR the second figure
    TaskMetadata("wordpred", "dictionary", ("dev", "test"), "mrr@10", None,
                 ("unseen", "multi-definition", "all-definitions"),
                 description="word prediction: the model's frozen head predicts the defined word (DefSent)",
                 also_metrics=("mrr",)),
    # SentEval's transfer tasks (evaluation/kinds/transfer.py, the probe evaluation/transfer.py): a dev
    # figure is named ``<task>-dev``, a test one ``<task>`` (a train-only task: its outer folds')
    _transfer("mr", ("train",), "acc", "MR/rt-polarity.pos", "MR/rt-polarity.neg"),
    _transfer("cr", ("train",), "acc", "CR/custrev.pos", "CR/custrev.neg"),
    _transfer("subj", ("train",), "acc", "SUBJ/subj.objective", "SUBJ/subj.subjective"),
    _transfer("mpqa", ("train",), "acc", "MPQA/mpqa.pos", "MPQA/mpqa.neg"),
    _transfer("sst2", ("train", "dev", "test"), "acc", *(f"SST/binary/sentiment-{s}" for s in ("train", "dev", "test"))),
    _transfer("trec", ("train", "test"), "acc", "TREC/train_5500.label", "TREC/TREC_10.label"),
    _transfer("mrpc", ("train", "test"), "acc", "MRPC/msr_paraphrase_train.txt", "MRPC/msr_paraphrase_test.txt",
              also=("f1",)),
    # the SICK test split is held back here: its figures are the trial split's, named as dev
    _transfer("sick-e", ("train", "dev", "test"), "acc", *(f"SICK/SICK_{s}.txt" for s in ("train", "trial", "test_annotated"))),
    _transfer("sickr-sup", ("train", "dev", "test"), "pearson",
              *(f"SICK/SICK_{s}.txt" for s in ("train", "trial", "test_annotated")), also=("spearman",)),
    _transfer("stsb-sup", ("train", "dev", "test"), "pearson",
              *(f"STS/STSBenchmark/sts-{s}.csv" for s in ("train", "dev", "test")), also=("spearman",)),
    # not SentEval's: BBC titles -> topic (corpus/bbc/<topic>/*.txt), SentEval's train-only protocol, in no
    # paper average
    _transfer("bbc-topics", ("train",), "acc", "corpus/bbc/<topic>/*.txt", also=("acc_sd",)),
    TaskMetadata(TRANSFER_GROUP, "transfer", ("test",), "acc", description="every transfer task whose files are present"),
)
TASKS: dict[str, TaskMetadata] = {t.name: t for t in _TABLE}
STS_TASKS: dict[str, TaskMetadata] = {t.name: t for t in _TABLE if t.kind == "sts"}
DICTIONARY_TASKS: tuple[str, ...] = tuple(t.name for t in _TABLE if t.kind == "dictionary")
EVAL_TASKS: tuple[str, ...] = tuple(TASKS)
DEFAULT_TASKS: tuple[str, ...] = tuple(t.name for t in _TABLE if t.default)
AVERAGE_TASKS: tuple[str, ...] = tuple(t.name for t in _TABLE if t.in_average)
AVERAGE_TASK = "sts7"                   # the mean over the AVERAGE_TASKS, only when all are present; sts7_test_n: how many are
AVERAGE_COLUMN = "sts7_test_spearman"
_FAMILIES: dict[str, TaskMetadata] = {}
for _t in _TABLE:
    _FAMILIES.setdefault(_t.family, _t)


# -- names --------------------------------------------------------------------------------------------
HEAD_TOKENS = ("headcos", "headdot", "headpooler", "headnopooler", "headac", "headamp", "headica", "headnoica")
"""Variant tokens of a head figure scored with a head other than the model's own (a run's untrained
baseline scored with the head the run trains): what differs from the model's own head."""


def without_head(task: str) -> str:
    """``task`` without its head tokens: the figure of the model's own head it stands beside
    (``revdict-dev+q500+headcos`` -> ``revdict-dev+q500``)."""
    base, *variant = task.split(VARIANT_SEP)
    return with_variant(base, [v for v in variant if v not in HEAD_TOKENS])


def with_variant(task: str, tokens: Sequence[str]) -> str:
    """``task`` with its variant tokens: ``sts12`` + ``("len64",)`` -> ``sts12+len64``."""
    return VARIANT_SEP.join([task, *tokens])


def dictionary_task(family: str, split: str, protocol: str = "unseen",
                    settings: FigureSettings = CANONICAL) -> str:
    """The recorded task name of a dictionary figure: ``revdict`` (test, unseen, canonical settings),
    ``revdict-dev`` (the selection figure), ``wordpred-alldefs`` (every definition: DefSent's Table 2),
    ``revdict-dev-multidef+len64`` ..."""
    meta = TASKS[family]
    if protocol not in meta.protocols:
        raise ValueError(f"{family}: protocol must be one of {meta.protocols}, got {protocol!r}")
    words = [family] + ([] if split == "test" else [split])
    if protocol != meta.default_protocol:
        words.append(PROTOCOLS[protocol].word)
    return with_variant("-".join(words), settings.tokens("dictionary", protocol, candidates=bool(meta.candidates)))


class TaskParts(NamedTuple):
    family: str
    split: str
    protocol: str | None
    variant: tuple[str, ...]


def task_parts(task: str) -> TaskParts:
    """``(family, split, protocol, variant)`` of a recorded task name.

    ``revdict-dev-multidef+q500`` -> ``('revdict', 'dev', 'multidef', ('q500',))``; a task of a
    family with protocols that names none has its default (``unseen``); a task without a split
    word is a test task.
    """
    base, *variant = task.split(VARIANT_SEP)
    family, *rest = base.split("-")
    split = next((w for w in rest if w in SPLITS), "test")
    extra = [w for w in rest if w not in SPLITS]
    meta = _FAMILIES.get(family)
    protocol = "-".join(extra) if extra else (PROTOCOLS[meta.default_protocol].word
                                              if meta is not None and meta.default_protocol else None)
    return TaskParts(family, split, protocol, tuple(variant))


def metric_column(task: str, setting: str, metric: str) -> str:
    """The name of one figure: ``<family>_<split>[_<protocol>][_<variant>...][_<mode>]_<metric>``.

    ``setting`` is the reverse-dictionary mode (head, cosine, hybrid); STS's ``all`` is left out.
    """
    family, split, protocol, variant = task_parts(task)
    parts = [family, split, protocol, *variant, None if setting == "all" else setting, metric]
    return re.sub(r"[^A-Za-z0-9]+", "_", "_".join(p for p in parts if p))


def split_group(task: str) -> Literal["dev", "train", "test"]:
    """Which figures a choice may read: ``dev``; ``train``; everything else is reported (``test``)."""
    split = task_parts(task).split
    return split if split in ("dev", "train") else "test"  # type: ignore[return-value]


# -- selection figures ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SelectionMetric:
    """A figure a choice is made by (PST's ``selection:``): a dev-split figure of a registry task, its
    main metric, named as every figure is. A selection figure is computed by the task's evaluator and
    stored in the evaluation store under the evaluation key, like any other figure.

    Example:
        >>> SELECTION_METRICS["stsb-dev"].figure(settings=FigureSettings(autocast="bf16"))
        ('stsb-dev+bf16', 'all', 'spearman')
        >>> SELECTION_METRICS["revdict-mrr"].column(mode="cosine", settings=FigureSettings(max_length=64))
        'revdict_dev_unseen_len64_cosine_mrr'
    """

    name: str               # as a config names it
    task: str               # the registry task whose evaluator computes it
    split: Split = "dev"

    @property
    def metadata(self) -> TaskMetadata:
        return TASKS[self.task]

    def figure(self, *, mode: str | None = None, settings: FigureSettings = CANONICAL) -> tuple[str, str, str]:
        """``(recorded task, setting, metric)`` of the figure: the task's main metric, in ``mode`` for a
        dictionary task (its setting), under ``settings``."""
        meta = self.metadata
        if meta.kind == "sts":
            return with_variant(self.task, settings.tokens("sts")), meta.main_setting or "all", meta.main_metric
        if not mode:
            raise ValueError(f"selection by {self.name} needs a reverse-dictionary mode")
        return dictionary_task(meta.family, self.split, meta.default_protocol or "unseen", settings), mode, meta.main_metric

    def column(self, *, mode: str | None = None, settings: FigureSettings = CANONICAL) -> str:
        """The figure's leaderboard column."""
        return metric_column(*self.figure(mode=mode, settings=settings))


SELECTION_METRICS: dict[str, SelectionMetric] = {m.name: m for m in (
    SelectionMetric("stsb-dev", "stsb-dev"),
    SelectionMetric("revdict-mrr", "revdict"),
)}


# -- the same, for the catalog ---------------------------------------------------------------------------
def _q(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return "'" + str(value).replace("'", "''") + "'"


def registry_ddl() -> str:
    """SQL that the catalog applies before its views (``storage.schema``): the table
    ``eval_task_registry`` (one row per task, plus the STS average as kind ``average``), the macros
    that name figures exactly as :func:`metric_column` and :func:`split_group` do, and the ones the
    views read the registry through (``is_headline``, ``in_sts_average``, ``average_task``: rendered
    as literals, a join per metric row costs more than the view's other work)."""
    rows = [(t.name, t.family, t.kind, t.split, t.main_metric, t.main_setting,
             PROTOCOLS[t.default_protocol].word if t.default_protocol else None, t.in_average) for t in _TABLE]
    rows.append((AVERAGE_TASK, AVERAGE_TASK, "average", "test", "spearman", "all", None, False))
    values = ",\n    ".join("(" + ", ".join(_q(v) for v in r) + ")" for r in rows)
    splits = ", ".join(_q(s) for s in SPLITS)
    defaults = " ".join(f"WHEN {_q(f)} THEN {_q(PROTOCOLS[t.default_protocol].word)}"
                        for f, t in _FAMILIES.items() if t.default_protocol)

    def shown(t: TaskMetadata) -> str:
        return (f"metric IN ({', '.join(_q(m) for m in (t.main_metric, *t.also_metrics))})"
                + (f" AND setting = {_q(t.main_setting)}" if t.main_setting else ""))

    headline = " ".join(f"WHEN {_q(f)} THEN {shown(t)}" for f, t in _FAMILIES.items())
    # a task of another kind in a family's name (stsb-sup: a transfer task beside STS-B) by its own word
    beside = " ".join(f"WHEN task_family(task) = {_q(t.family)} AND task_protocol(task) = {_q(t.name.split('-', 1)[1])} "
                      f"THEN {shown(t)}" for t in _TABLE if t.kind != _FAMILIES[t.family].kind)
    headline = f"CASE {beside} ELSE CASE task_family(task) {headline} ELSE TRUE END END" if beside else \
        f"CASE task_family(task) {headline} ELSE TRUE END"
    average = ", ".join(_q(t) for t in AVERAGE_TASKS)
    sep = _q(VARIANT_SEP)
    return f"""-- Generated from defsentflow/eval_tasks.py (registry_ddl): the evaluation tasks' metadata and the
-- figure-naming macros. Applied with the numbered DDL files (storage/schema.py); edit the Python, not this.
CREATE OR REPLACE TABLE eval_task_registry (
    task VARCHAR PRIMARY KEY, family VARCHAR NOT NULL, kind VARCHAR NOT NULL, split VARCHAR NOT NULL,
    main_metric VARCHAR NOT NULL, main_setting VARCHAR, default_protocol VARCHAR, in_average BOOLEAN NOT NULL
);
INSERT INTO eval_task_registry VALUES
    {values};
CREATE OR REPLACE MACRO task_base(task) AS split_part(task, {sep}, 1);
CREATE OR REPLACE MACRO task_variant(task) AS nullif(array_to_string(string_split(task, {sep})[2:], {sep}), '');
CREATE OR REPLACE MACRO task_family(task) AS split_part(task_base(task), '-', 1);
CREATE OR REPLACE MACRO task_split(task) AS
    coalesce(list_filter(string_split(task_base(task), '-')[2:], lambda w: w IN ({splits}))[1], 'test');
CREATE OR REPLACE MACRO task_protocol(task) AS
    coalesce(nullif(array_to_string(list_filter(string_split(task_base(task), '-')[2:],
                                                lambda w: w NOT IN ({splits})), '-'), ''),
             CASE task_family(task) {defaults} END);
CREATE OR REPLACE MACRO metric_column(task, setting, metric) AS
    regexp_replace(concat_ws('_', task_family(task), task_split(task), task_protocol(task),
                             replace(task_variant(task), {sep}, '_'), CASE WHEN setting = 'all' THEN NULL ELSE setting END,
                             metric),
                   '[^A-Za-z0-9]+', '_', 'g');
CREATE OR REPLACE MACRO split_group(task) AS
    CASE WHEN task_split(task) IN ('dev', 'train') THEN task_split(task) ELSE 'test' END;
-- a metric row is one of its task's leaderboard figures: its family's main metric and its second ones
-- (word prediction: MRR@10, then full-rank MRR), in its main setting; a family the registry does not
-- know keeps every metric
CREATE OR REPLACE MACRO is_headline(task, setting, metric) AS
    {headline};
CREATE OR REPLACE MACRO in_sts_average(task) AS task_base(task) IN ({average});
CREATE OR REPLACE MACRO average_task() AS {_q(AVERAGE_TASK)};
-- how many tasks the STS average is of: an average over fewer is left empty (its count is kept beside it)
CREATE OR REPLACE MACRO sts_average_size() AS {len(AVERAGE_TASKS)};
"""
