"""The evaluation config: one frozen model for ``defsentflow eval``, the ``evaluate`` flow, the
evaluation suite and a pipeline config's ``eval:`` section.

:class:`EvalConfig` says what to evaluate and how. Its two uses with a wider frame add only what
they need: :class:`EvaluateSection` names the model (the ``evaluate`` flow's parameters), and
:class:`EvalSection` (the pipeline's ``eval:`` section) adds the baselines and keeps the pipeline's
defaults (every task including the reverse dictionary, ``../shared/data``, mean pooling).

Example:
    >>> EvalConfig(tasks="sts12, stsb-dev").tasks
    ('sts12', 'stsb-dev')
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from defsentflow.config_tools import (
    LIMITS,
    Autocast,
    CandidateSet,
    ConfigSection,
    DictionarySplit,
    EntryEncoding,
    EvalPooling,
    Pooling,
    RevdictMode,
    RevdictProtocol,
    SickSplit,
)
from defsentflow.eval_tasks import CANONICAL, DEFAULT_TASKS, DICTIONARY_TASKS, EVAL_TASKS, PROTOCOLS, TASKS, TieRule
from defsentflow.storage import repo_root

__all__ = ["DICTIONARY_TASKS", "EVAL_TASKS", "EvalConfig", "EvalSection", "EvaluateSection", "RunHead", "default_data_dir",
           "validate_eval_tasks"]

SEVEN_STS = DEFAULT_TASKS   # the STS tasks evaluated by default (defsentflow/eval_tasks.py)


def validate_eval_tasks(tasks: str | Sequence[str]) -> tuple[str, ...]:
    """Split a comma list and reject unknown task names, listing the valid ones."""
    names = [t.strip() for t in (tasks.split(",") if isinstance(tasks, str) else tasks) if t.strip()]
    if not names:
        raise ValueError(f"no tasks given; valid: {', '.join(EVAL_TASKS)}")
    bad = [t for t in names if t not in EVAL_TASKS]
    if bad:
        raise ValueError(f"unknown task(s) {bad}; valid: {', '.join(EVAL_TASKS)}")
    return tuple(dict.fromkeys(names))


def default_data_dir() -> Path:
    """``../shared/data`` beside the working directory, else beside the source checkout."""
    here = Path.cwd().parent / "shared" / "data"
    return here if here.is_dir() else repo_root().parent / "shared" / "data"


def _as_tuple(v: Any) -> Any:
    """YAML and JSON give lists; the frozen model keeps tuples."""
    return tuple(v) if isinstance(v, list) else v


class EvalConfig(ConfigSection):
    """What to evaluate and how.

    Example:
        >>> EvalConfig(tasks=("sts12", "stsb-dev"), data_dir="../shared/data", pooling="mean")
    """

    tasks: tuple[str, ...] = SEVEN_STS
    data_dir: str | None = Field(None, description="STS/SICK data; None: ../shared/data (default_data_dir)")
    pooling: Pooling | None = Field(None, description="None: the model's training pooling (defsentflow.json), else mean")
    batch_size: int = Field(128, ge=1, le=LIMITS["batch"])
    max_length: int = Field(CANONICAL.max_length, ge=1, le=LIMITS["tokens"], description="tokens per text, every task")
    autocast: Autocast = "none"
    sick_split: SickSplit = "auto"
    per_subset: bool = False
    pearson: bool = Field(False, description="STS: Pearson x 100 rows (metric pearson) beside Spearman, the figure "
                                             "SBERT-WK's Table III reports")
    dictionary: str | None = Field(None, description="revdict / wordpred: dictionary dataset name or artifact key")
    revdict_splits: tuple[DictionarySplit, ...] = Field(
        ("dev", "test"), min_length=1,
        description="reverse-dictionary / word-prediction query splits: dev figures are for selection, test for reporting")
    revdict_protocols: tuple[RevdictProtocol, ...] = Field(
        ("unseen",), min_length=1,
        description="; ".join(f"{p.name}: {p.description}" for p in PROTOCOLS.values())
                    + " (all-definitions: word prediction only)")
    revdict_max_queries: int | None = Field(CANONICAL.max_queries, ge=1, le=LIMITS["count"],
                                            description="the unseen protocol's sample size (the others take every query)")
    revdict_candidates: CandidateSet = Field(
        "all", description="reverse-dictionary candidates: every entry of the dictionary, or only the split's")
    revdict_modes: tuple[RevdictMode, ...] = Field(
        ("head", "cosine"), min_length=1,
        description="reverse-dictionary modes; hybrid adds the headword's own vector to each entry")
    ties: TieRule = Field(CANONICAL.ties, description="the rank of a gold entry tied with others (word prediction, "
                                                      "reverse dictionary): after them, in the middle, or before them")
    device: str = "auto"
    cache: bool = Field(False, description="keep definition vectors in the data root's embedding cache")

    _tuples = field_validator("revdict_splits", "revdict_protocols", "revdict_modes", mode="before")(_as_tuple)

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, v: Any) -> tuple[str, ...]:
        return validate_eval_tasks(v)

    @model_validator(mode="after")
    def _consistent(self) -> EvalConfig:
        self._check_dictionary()
        return self

    def _check_dictionary(self) -> None:
        needs = [t for t in DICTIONARY_TASKS if t in self.tasks]
        if needs and not self.dictionary:
            raise ValueError(f"task {needs[0]!r} needs a dictionary dataset (--dictionary NAME)")
        for p in self.revdict_protocols:
            if needs and not any(p in TASKS[t].protocols for t in needs):
                served = "; ".join(f"{t}: {', '.join(TASKS[t].protocols)}" for t in needs)
                raise ValueError(f"revdict_protocols: {p!r} applies to no requested task ({served})")

    def resolved_data_dir(self) -> str:
        """``data_dir``, or :func:`default_data_dir` when unset."""
        return self.data_dir or str(default_data_dir())


class RunHead(ConfigSection):
    """The head a run trains (its logit rule, pooler and entry encoding): a pipeline scores its untrained
    baseline's head figures with it, so a model that learns nothing scores what its base scores."""

    normalize_logits: bool
    use_pooler: bool
    entry_encoding: EntryEncoding | None = None


class EvaluateSection(EvalConfig):
    """The ``evaluate`` flow's parameters: the model, the id its scores are filed under, the head its
    head figures are scored with when not its own (``head``), and the evaluation settings."""

    model_config = ConfigDict(protected_namespaces=())

    model: str
    model_id: str | None = None
    head: RunHead | None = None


class EvalSection(EvalConfig):
    """A pipeline config's ``eval:`` section: the selected encoder and the baselines, with the
    pipeline's defaults. The dictionary is the pipeline's ``dictionary.name``. An unknown task name
    is refused here with the valid list; the evaluation plan keeps the tasks whose data is present."""

    tasks: tuple[str, ...] = (*SEVEN_STS, "revdict")
    data_dir: str | None = Field("../shared/data", description="STS/SICK data; tasks whose files are missing are skipped and listed")
    pooling: EvalPooling | None = Field(
        "mean", description="None: the pooling the selected candidate was trained and selected with (PST's "
                            "selection_pooling, else its training pooling), for it and the untrained baseline")
    baselines: tuple[Literal["untrained", "sbert_wk", "surrogate"], ...] = ("untrained", "sbert_wk")
    seed_stats: bool = Field(
        False, description="also evaluate every seed of the chosen PST combination at every step (1st, 2nd, 3rd, "
                           "3rd-ICA) with the evaluation's pooling and every also_poolings: the catalog's seed_stats, "
                           "the report and the leaderboard give mean ± sd per step and pooling (DefSent+ Table 2)")
    best_trained: bool = Field(
        False, description="also evaluate the best trained PST candidate when the untrained encoder was selected")
    also_poolings: tuple[EvalPooling, ...] = Field(
        (), description="further poolings (STS tasks) for the selected encoder and the untrained baseline, filed as "
                        "'<model id>+<pooling>', and for every seed with seed_stats (DefSent+ Table 7's pooling per "
                        "encoder: Prompt for BERT-base, BERT-large and RoBERTa-base, Mean for RoBERTa-large)")

    baseline_poolings: tuple[EvalPooling, ...] = Field(
        (), description="further poolings for the untrained baseline on every task (word prediction included), filed "
                        "as '<base id>+<pooling>' (DefSent's Table 2: the pretrained model with CLS, Mean and Max)")

    _baselines = field_validator("baselines", "also_poolings", "baseline_poolings", mode="before")(_as_tuple)

    def _check_dictionary(self) -> None:
        if self.dictionary is not None:
            raise ValueError("the pipeline evaluates on its dictionary.name: leave eval.dictionary out")
