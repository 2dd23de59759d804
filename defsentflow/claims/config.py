"""The claims config: a base pipeline config, the claims to measure, their seeds and sizes.

A claims file names a pipeline config (``base``, a path or the config inline) and says which of
the papers' claims to measure on it, with how many seeds. Every arm of a claim is that base with
a few values changed (:mod:`defsentflow.claims.arms`), run by the ordinary pipeline::

    name: claims-raw-ci
    base: raw-ci.yaml                 # relative: this file's folder, then cwd / the repository root
    set: {pst.max_train_entries: 4000}
    seeds: [0, 1, 2]                  # training seeds: every claim about a difference uses all
    claims: [defsent_plus_beats_defsent, more_entries_help]
    entries: [1000, 2000, 4000]       # more_entries_help: max_train_entries per arm
    steps: 3                          # PST claims: the number of steps
    transition_steps: [2]             # PST arms: step 2 is a transition (the paper's BERT runs)
    ica_step: 3                       # ica_candidate_helps: Eq. 11's ICA candidate at step 3
    pretrain_seeds: [0, 1, 2]         # sbert_wk_beats_mean: one raw encoder per pretraining seed
    defsent: {method: defsent, batch_size: 16, lr: 5.0e-5, use_pooler: false}

Unknown keys, a claim name that does not exist or a base config that is not a PST pipeline config
are errors naming the file and the key (:func:`defsentflow.claims.load.load_claims`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from defsentflow.config_tools import LIMITS, ConfigSection, dotted_overrides, require_distinct
from defsentflow.dictionary.config import NAME_PATTERN

ClaimsOverrides = dotted_overrides("the claims file")

__all__ = ["CLAIM_IDS", "ClaimId", "ClaimsConfig", "ClaimsFile", "IsotropyStatistic"]

ClaimId = Literal[
    "defsent_plus_beats_defsent",
    "later_steps_beat_step_1",
    "separate_beats_continuing",
    "more_entries_help",
    "ica_candidate_helps",
    "entry_space_more_isotropic",
    "sbert_wk_beats_mean",
    "defsent_raises_wordpred",
]
CLAIM_IDS: tuple[str, ...] = ClaimId.__args__  # type: ignore[attr-defined]

# entry_space_stats columns where a higher value means a more isotropic space
IsotropyStatistic = Literal["isoscore", "partition_isotropy", "effective_rank"]


class ClaimsFile(ConfigSection):
    """The claims YAML (frozen, unknown keys refused, strict types)."""

    name: str = Field(pattern=NAME_PATTERN, description="the claims run's name; arm configs are named <name>-<id>")
    description: str | None = None
    base: str | dict[str, Any] = Field(description="the base pipeline config (a pst: section): a path, or inline")
    set: ClaimsOverrides = Field(default_factory=dict, description="dotted key -> value applied to the base first")
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1, description="training seeds")
    claims: list[ClaimId] = Field(default_factory=lambda: list(CLAIM_IDS), min_length=1)
    entries: list[int] = Field(default_factory=lambda: [2000, 4000, 8000], min_length=2,
                               description="more_entries_help: max_train_entries per arm, ascending")
    steps: int = Field(3, ge=2, le=LIMITS["pst_steps"], description="PST claims: steps per run (fixed, never 'auto')")
    ica_step: int | None = Field(None, ge=1, le=LIMITS["pst_steps"],
                                 description="ica_candidate_helps: the ICA step (None: the last step)")
    transition_steps: list[int] = Field(
        default_factory=list, description="PST arms: steps kept as the next step's entry source even when they "
                                          "score lower (the paper's step 2)")
    pretrain_seeds: list[int] = Field(default_factory=lambda: [0], min_length=1,
                                      description="sbert_wk_beats_mean: pretraining seeds (one raw encoder each)")
    isotropy_statistic: IsotropyStatistic = "isoscore"
    scope: str = Field("on this control", min_length=1, max_length=200,
                       description="what every verdict is about, printed with it ('holds on this control'); the "
                                   "control's departures from the paper are listed with the table")
    defsent: dict[str, Any] = Field(
        default_factory=lambda: {"method": "defsent"},
        description="the DefSent arm's defsent: section; base_model, dictionary, max_train_entries and seed "
                    "come from the base's pst: section and the seed")

    @field_validator("seeds", "pretrain_seeds", "claims")
    @classmethod
    def _distinct(cls, v: list[Any]) -> list[Any]:
        require_distinct(v, "values")
        return v

    @model_validator(mode="after")
    def _steps(self) -> ClaimsFile:
        if self.ica_step is not None and self.ica_step > self.steps:
            raise ValueError(f"ica_step {self.ica_step} is after the last step ({self.steps})")
        if any(not 1 <= k < self.steps for k in self.transition_steps):
            raise ValueError(f"transition_steps must be steps before the last ({self.steps}), got {self.transition_steps}")
        return self

    @field_validator("entries")
    @classmethod
    def _ascending(cls, v: list[int]) -> list[int]:
        if any(b <= a for a, b in zip(v, v[1:])) or v[0] < 2:
            raise ValueError(f"entries must be ascending counts >= 2, got {v}")
        return v


class ClaimsConfig(ConfigSection):
    """A validated claims file: its settings, the base config (with ``set`` applied) and where it came from."""

    spec: ClaimsFile
    base: dict[str, Any]
    path: str | None = None
    base_path: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def home(self) -> str | None:
        return self.base.get("home") if isinstance(self.base.get("home"), str) else None
