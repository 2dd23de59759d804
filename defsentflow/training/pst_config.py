"""Boundary configs for Progressive Separate Training (``pst:``) and single DefSent runs (``defsent:``).

These are the pydantic models a YAML config is validated against (``extra="forbid"``: a typo is an
error naming the key). Inside the library the sections are turned into frozen
:class:`~defsentflow.training.config.TrainConfig` objects, one per training candidate.

Example:
    >>> section = PstSection(base_model="minilm", dictionary="sample", steps=2, seeds=[0])
    >>> section.lr_for_step(2)
    2e-05
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from defsentflow.config_tools import (
    LIMITS,
    Autocast,
    ConfigSection,
    EntryEncoding,
    EvalPooling,
    Method,
    Seed,
    TrainPooling,
    require_distinct,
)
from defsentflow.training.config import check_negatives, drop_full_negatives

__all__ = [
    "DEFAULT_GRID",
    "DefSentSection",
    "FinalRule",
    "GridPoint",
    "PstSection",
    "IcaFit",
    "SelectionMetric",
    "SelectionRule",
    "TrainEntries",
]

SelectionMetric = Literal["stsb-dev", "revdict-mrr"]
SelectionRule = Literal["best_seed", "mean_over_seeds"]
FinalRule = Literal["last", "best_dev"]
TrainEntries = Literal["train_split", "all"]
SelectionRevdictMode = Literal["head", "cosine"]


class GridPoint(ConfigSection):
    """One training combination: how definitions are pooled and how entries are encoded."""

    pooling: TrainPooling = "mean"
    entry_encoding: EntryEncoding = "amp"

    @property
    def label(self) -> str:
        return f"{self.pooling}-{self.entry_encoding}"


# The DefSent+ paper's four combinations, searched at step 1.
DEFAULT_GRID: tuple[GridPoint, ...] = (
    GridPoint(pooling="cls", entry_encoding="amp"),
    GridPoint(pooling="mean", entry_encoding="amp"),
    GridPoint(pooling="cls", entry_encoding="ac"),
    GridPoint(pooling="mean", entry_encoding="ac"),
)


class IcaFit(ConfigSection):
    """How the ICA transform of an entry matrix is fitted (DefSent+, Liu 2024, Sec. 3.3).

    scikit-learn's FastICA with ``n_components`` = the hidden size and unit-variance whitening;
    the defaults are the paper's reference script: standardised features, ``max_iter`` 1000,
    ``random_state`` 42, the result multiplied by 100.
    """

    max_iter: int = Field(1000, ge=1, le=LIMITS["count"])
    random_state: Seed = 42
    scale: float = Field(100.0, gt=0, description="the transformed matrix is multiplied by this")
    standardize: bool = Field(True, description="scale each dimension to unit variance before FastICA")


class _TrainingCommon(ConfigSection):
    base_model: str = Field("minilm", description="path, Hugging Face id or 'minilm' (the bundled MiniLM)")
    dictionary: str = Field("sample", description="dictionary dataset name (or artifact key)")
    use_pooler: bool = True
    untrained_pooler: Literal["mlm_dense", "random"] = Field(
        "mlm_dense", description="a checkpoint whose pooler was never trained (a masked-LM-only BERT; RoBERTa): "
                                 "start the pooler from the MLM head's dense layer with GELU, as DefSent+ does for "
                                 "RoBERTa, or from random weights (warned)")
    mlm_dense_from: str | None = Field(
        None, description="the raw checkpoint (e.g. roberta-base) whose MLM head's dense layer, with GELU, replaces "
                          "the pooler of a base model trained elsewhere (a SimCSE / SNCSE RoBERTa stores its MLP "
                          "there), as DefSent+'s reference does (TrainEncoder.py: backbone_model_name)")
    batch_size: int | None = Field(None, ge=1, le=LIMITS["batch"],
                                   description="None: the paper's (DefSent 16; DefSent+ 32 on dataset variant a, "
                                               "16 on b and c)")
    max_length: int = Field(64, ge=8, le=512)
    batching: Literal["random", "length"] = Field(
        "length", description="length: shuffled, then length-sorted within chunks of 50 batches (faster); random: "
                              "random batches, as DefSent+'s reference code (DefSent's reads its file in order, a "
                              "word's definitions together: training.batching)")
    max_train_entries: int | None = Field(None, ge=2, le=LIMITS["count"],
                                          description="deterministic subset of training entries")
    device: str = "auto"
    autocast: Autocast = "none"
    temperature: float = Field(1.0, gt=0)
    normalize_logits: bool = False
    negatives: str = Field("full", description="DefSent+ softmax: full (every entry) or 'sampled K' (the batch's "
                                                "targets and K sampled entries) for matrices beyond a GPU's memory")
    checkpoint_every: int = Field(200, ge=1, le=LIMITS["opt_steps"])
    entry_batch_size: int = Field(128, ge=1, le=LIMITS["batch"])
    train_entries: TrainEntries = Field(
        "train_split", description="train_split: only the dictionary's train split (keeps reverse-dictionary "
                                   "queries unseen); all: every split, as DefSent+ trains (DefSent trains on its train split only)")
    ica_fit: IcaFit = IcaFit()

    @field_validator("negatives")
    @classmethod
    def _negatives(cls, v: str) -> str:
        return check_negatives(v)

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return drop_full_negatives(handler(self))


class PstSection(_TrainingCommon):
    """Progressive Separate Training settings (the ``pst:`` section of a pipeline config).

    Step 1 builds the entry matrix with ``base_model`` and trains fresh copies of it, one per
    (grid point, seed); step k > 1 rebuilds the entry matrix with step k-1's best encoder and again
    trains fresh copies of ``base_model``. The untrained model is candidate "step 0".

    Example:
        >>> PstSection(steps="auto", max_steps=4, lr_per_step=[3e-5, 2e-5, 1e-5])
    """

    steps: int | Literal["auto"] = 2
    max_steps: int = Field(5, ge=1, le=LIMITS["pst_steps"], description="upper bound when steps is 'auto'")
    seeds: list[Seed] = Field(default_factory=lambda: [0, 1, 2], min_length=1, max_length=LIMITS["list_items"])
    grid: list[GridPoint] = Field(default_factory=lambda: list(DEFAULT_GRID), min_length=1,
                                  max_length=LIMITS["list_items"])
    lr: float = Field(2e-5, gt=0)
    lr_per_step: list[float] | None = None
    step1_lr_grid: list[float] | None = Field(
        None, min_length=1, max_length=LIMITS["list_items"],
        description="step 1 trains every grid point at each of these rates and chooses the (pooling, entry "
                    "encoding, rate) on the selection figure, as DefSent+ does for a raw pretrained model (Appendix A: "
                    "{5e-5, 4e-5, 3e-5}); later steps use lr_per_step / lr")
    regrid_steps: list[int] = Field(
        default_factory=list, max_length=LIMITS["list_items"],
        description="steps after the 1st that search grid again instead of keeping the previous step's chosen "
                    "combination (DefSent+ Table 3: SNCSE-RoBERTa-large trains (CLS, AC) at the 1st step, "
                    "(Mean, AC) at the 2nd)")
    ica_step: int | None = Field(
        None, ge=1, le=LIMITS["pst_steps"],
        description="at this step the ICA-transformed entry matrix is a candidate beside the plain one "
                    "(Eq. 11); steps: auto never stops before it")
    transition_steps: list[int] = Field(
        default_factory=list, max_length=LIMITS["list_items"],
        description="steps whose best encoder builds the next step's entries even when the "
                    "step scores below the best earlier step (and auto does not stop there)")
    separate: bool = Field(True, description="true: every step trains a fresh copy of base_model (PST); false: "
                                             "step k > 1 continues from step k-1's best encoder")
    selection_rule: SelectionRule = Field(
        "best_seed", description="best_seed: the best single candidate; mean_over_seeds: the grid point (and ICA "
                                 "choice) with the best mean over seeds, then its best seed")
    final: FinalRule = Field(
        "best_dev", description="the encoder PST returns: best_dev, the step with the best dev figure (the untrained "
                                "encoder included); last, the last step's chosen candidate (the papers' final encoder)")
    selection: SelectionMetric = "stsb-dev"
    selection_pooling: EvalPooling | None = Field(None, description="None: each candidate's training pooling")
    selection_revdict_mode: SelectionRevdictMode = "cosine"
    selection_max_queries: int = Field(2000, ge=1, le=LIMITS["count"])
    data_dir: str | None = Field("../shared/data", description="STS data (relative: cwd, then the repo root)")

    @field_validator("steps")
    @classmethod
    def _steps_positive(cls, v: int | str) -> int | str:
        if isinstance(v, int) and not 1 <= v <= LIMITS["pst_steps"]:
            raise ValueError(f"steps must be 'auto' or from 1 to {LIMITS['pst_steps']}, got {v}")
        return v

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, v: list[int]) -> list[int]:
        require_distinct(v, "seeds")
        return v

    @field_validator("grid")
    @classmethod
    def _unique_grid(cls, v: list[GridPoint]) -> list[GridPoint]:
        require_distinct([g.label for g in v], "grid points")
        return v

    @field_validator("lr_per_step")
    @classmethod
    def _non_increasing(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("lr_per_step must not be empty (leave it out to use lr for every step)")
        if any(x <= 0 for x in v):
            raise ValueError(f"lr_per_step must be positive, got {v}")
        for k in range(1, len(v)):
            if v[k] > v[k - 1]:
                raise ValueError(
                    f"lr_per_step must be non-increasing: step {k + 1} has {v[k]:g} > step {k}'s {v[k - 1]:g}"
                )
        return v

    @field_validator("step1_lr_grid")
    @classmethod
    def _lr_grid(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        if any(x <= 0 for x in v):
            raise ValueError(f"step1_lr_grid must be positive rates, got {v}")
        require_distinct(v, "step1_lr_grid rates")
        return v

    @field_validator("regrid_steps")
    @classmethod
    def _regrid_steps(cls, v: list[int]) -> list[int]:
        require_distinct(v, "regrid_steps")
        if any(not 2 <= k <= LIMITS["pst_steps"] for k in v):
            raise ValueError(f"regrid_steps are step numbers from 2 to {LIMITS['pst_steps']} (step 1 always "
                             f"searches the grid), got {v}")
        return sorted(v)

    @field_validator("transition_steps")
    @classmethod
    def _transition_steps(cls, v: list[int]) -> list[int]:
        require_distinct(v, "transition_steps")
        if any(not 1 <= k <= LIMITS["pst_steps"] for k in v):
            raise ValueError(f"transition_steps are step numbers from 1 to {LIMITS['pst_steps']}, got {v}")
        return sorted(v)

    @model_validator(mode="before")
    @classmethod
    def _lr_from_steps(cls, data: Any) -> Any:
        """``lr`` unset with ``lr_per_step``: step 1's rate, so a dumped config validates again."""
        if isinstance(data, dict) and data.get("lr_per_step") and "lr" not in data:
            data = {**data, "lr": data["lr_per_step"][0]}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> PstSection:
        if self.lr_per_step and "lr" in self.model_fields_set and self.lr != self.lr_per_step[0]:
            raise ValueError(f"lr ({self.lr:g}) and lr_per_step[0] ({self.lr_per_step[0]:g}) disagree; set one of them")
        if self.ica_step is not None and self.ica_step > self.total_steps:
            raise ValueError(f"ica_step {self.ica_step} is after the last step ({self.total_steps})")
        if any(k > self.total_steps for k in self.regrid_steps):
            raise ValueError(f"regrid_steps {self.regrid_steps} go past the last step ({self.total_steps})")
        late = [k for k in self.transition_steps if k >= self.total_steps]
        if late:
            raise ValueError(f"transition_steps {late} must be before the last step ({self.total_steps})")
        if self.train_entries == "all" and self.selection == "revdict-mrr":
            raise ValueError("train_entries: all trains on the dev definitions, so selection: revdict-mrr would "
                             "select on seen queries; select by stsb-dev")
        return self

    @property
    def total_steps(self) -> int:
        """The number of steps to run (the upper bound when ``steps`` is 'auto')."""
        return self.max_steps if self.steps == "auto" else int(self.steps)

    def lr_for_step(self, step: int) -> float:
        """Learning rate of step ``step`` (1-based); the last listed value repeats."""
        if step < 1:
            raise ValueError("PST steps are numbered from 1")
        if not self.lr_per_step:
            return self.lr
        return self.lr_per_step[min(step, len(self.lr_per_step)) - 1]


class DefSentSection(_TrainingCommon):
    """One DefSent or DefSent+ training run (the ``defsent:`` section).

    DefSent predicts the defined word with the frozen word-prediction layer (single-token entries
    only); DefSent+ predicts the entry with a frozen entry-embedding head built by ``base_model``.

    Example:
        >>> DefSentSection(method="defsent", pooling="cls", batch_size=16, warmup_ratio=0.1)
    """

    method: Method = "defsent_plus"
    pooling: TrainPooling = "mean"
    entry_encoding: EntryEncoding = "amp"
    lr: float = Field(2e-5, gt=0)
    epochs: int = Field(1, ge=1, le=LIMITS["epochs"])
    seed: Seed = 0
    warmup_ratio: float | None = Field(None, ge=0.0, lt=1.0, description="None: the paper's (DefSent 0.1, DefSent+ 0)")
    ica: bool = Field(False, description="DefSent+: train against the ICA-transformed entry matrix (ica_fit)")
