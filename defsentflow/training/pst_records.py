"""The small, JSON-friendly records PST and DefSent runs pass between their steps.

Each has ``to_dict`` / ``from_dict``, so a step's result can be stored as an artifact, handed to a
Prefect task or subflow, and read back unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from defsentflow.training.pst_config import GridPoint

__all__ = ["Candidate", "DefSentResult", "MatrixRef", "PstResult", "SelectionPlan", "StepPlan",
           "StepResult"]


class _Record:
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        return cls(**d)


@dataclass(frozen=True)
class MatrixRef(_Record):
    """An entry matrix artifact: the folder ``path`` (:class:`~defsentflow.training.entry_matrix.EntryMatrix`;
    rows = ``TrainingData.entries``) and its content key."""

    key: str
    path: str
    encoder: str
    encoder_id: str
    encoding: str
    ica: bool
    n_entries: int
    dim: int
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate(_Record):
    """A scored (or to-be-scored) model: step 0 is the untrained encoder."""

    step: int
    seed: int | None
    pooling: str
    entry_encoding: str | None
    lr: float | None
    model_id: str
    model_dir: str
    artifact_key: str
    use_pooler: bool
    entry_matrix_path: str | None = None
    metric: str | None = None
    score: float | None = None
    score_note: str | None = None
    ica: bool = False           # trained against the ICA-transformed entry matrix
    column: str | None = None   # the selection figure's leaderboard column (the registry names it)
    lr_searched: bool = False   # one of the step's learning rates (pst.step1_lr_grid): the rate is part of its group

    @property
    def group(self) -> str:
        """The combination a candidate belongs to, across seeds: pooling, entry encoding, ICA (and the
        learning rate where the step searched rates)."""
        if self.step == 0:
            return f"untrained ({self.pooling})"
        rate = f" lr {self.lr:g}" if self.lr_searched and self.lr is not None else ""
        return f"{self.pooling}-{self.entry_encoding}{rate}{'+ica' if self.ica else ''}"

    @property
    def label(self) -> str:
        if self.step == 0:
            return self.group
        return f"{self.group}, seed {self.seed}"


@dataclass(frozen=True)
class StepResult(_Record):
    """A finished step: its candidates, the chosen one and the figure steps are compared by.

    ``figure`` is the chosen candidate's score (``rule`` best_seed) or the mean over seeds of its
    combination (``rule`` mean_over_seeds); ``group_means`` holds every combination's mean.
    """

    step: int
    candidates: tuple[Candidate, ...]
    best: Candidate
    key: str | None = None
    cached: bool = False
    seconds: float = 0.0
    lr: float | None = None
    entry_matrices: tuple[MatrixRef, ...] = ()
    rule: str = "best_seed"
    figure: float | None = None
    group_means: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepResult:
        d = dict(d)
        d["candidates"] = tuple(Candidate.from_dict(c) for c in d["candidates"])
        d["best"] = Candidate.from_dict(d["best"])
        d["entry_matrices"] = tuple(MatrixRef.from_dict(m) for m in d.get("entry_matrices", ()))
        d.setdefault("figure", d["best"].score)  # a step recorded before figures: its best score
        return cls(**d)


@dataclass(frozen=True)
class SelectionPlan(_Record):
    """Which metric ranks candidates, and why (``note`` says when it fell back)."""

    metric: str                 # "stsb-dev" | "revdict-mrr"
    data_dir: str | None
    data_hash: str              # STS-B dev file hash, or the dictionary hash for revdict
    note: str | None = None


@dataclass(frozen=True)
class StepPlan(_Record):
    """What a step trains. ``ica``: the ICA-transformed entry matrix is a candidate beside the
    plain one (Eq. 11). ``start``: the model every candidate starts from (None: a fresh copy of the
    base model, PST's "separate" training)."""

    step: int
    lr: float
    grid: tuple[GridPoint, ...]
    seeds: tuple[int, ...]
    ica: bool
    encoder: str                # builds this step's entry matrix
    encoder_id: str             # its content/artifact key
    source_step: int = 0        # the step whose best encoder that is (0: the base model)
    start: str | None = None
    start_id: str | None = None
    lrs: tuple[float, ...] = ()  # several rates searched at this step (pst.step1_lr_grid); () = lr alone

    @property
    def rates(self) -> tuple[float, ...]:
        return self.lrs or (self.lr,)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["grid"] = [g.model_dump() for g in self.grid]
        if not self.lrs:  # one rate: the plan (and its step key) as before rate grids
            d.pop("lrs")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepPlan:
        d = dict(d)
        d["grid"] = tuple(GridPoint.model_validate(g) for g in d["grid"])
        d["seeds"] = tuple(d["seeds"])
        d["lrs"] = tuple(d.get("lrs") or ())
        return cls(**d)


@dataclass(frozen=True)
class PstResult(_Record):
    run_id: str
    selection: SelectionPlan
    steps: tuple[StepResult, ...]
    winner: Candidate
    reason: str
    stop_note: str
    model_id: str
    model_dir: str
    record_path: str
    seconds: float



@dataclass(frozen=True)
class DefSentResult(_Record):
    run_id: str
    model_id: str
    model_dir: str
    method: str
    n_definitions: int
    entry_matrix_path: str | None
    seconds: float
