"""Training configuration shared by DefSent, DefSent+ and later stages that reuse the loop."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

__all__ = [
    "Method",
    "EntryEncoding",
    "LrDecay",
    "METHODS",
    "ENTRY_ENCODINGS",
    "TRAIN_POOLINGS",
    "TrainConfig",
    "paper_config",
    "validate_choice",
]

Method = Literal["defsent", "defsent_plus"]
EntryEncoding = Literal["ac", "amp"]  # AC: average of CLS vectors, AMP: average of mean-pooled vectors
LrDecay = Literal["auto", "linear", "none"]
TrainPooling = Literal["cls", "mean", "max"]

METHODS: tuple[str, ...] = get_args(Method)
ENTRY_ENCODINGS: tuple[str, ...] = get_args(EntryEncoding)
TRAIN_POOLINGS: tuple[str, ...] = get_args(TrainPooling)
_AUTOCASTS = ("none", "bf16", "fp16")

# Below this many definitions DefSent+ uses batch 16 instead of 32 (Liu 2024 trains the small
# dictionaries with the smaller batch).
SMALL_DATASET = 20_000


def validate_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    """Reject a wrong choice string with the list of valid ones."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run (both methods share the loop).

    ``use_pooler`` applies to DefSent+ only: DefSent feeds the pooled vector straight to the
    word-prediction layer, as in the paper. ``lr_decay="auto"`` follows the papers: DefSent warms up linearly over ``warmup_ratio`` and
    then keeps the rate constant (the reference code's schedule); DefSent+ decays linearly to
    zero. The optimizer follows the method too: Adam for DefSent, AdamW (eps 1e-6) for DefSent+.

    Example:
        >>> cfg = TrainConfig(method="defsent", pooling="cls", batch_size=16, warmup_ratio=0.1)
        >>> cfg.resolved_lr_decay
        'none'
    """

    method: Method = "defsent_plus"
    pooling: TrainPooling = "mean"
    use_pooler: bool = True
    lr: float = 2e-5
    batch_size: int = 32
    epochs: int = 1
    seed: int = 0
    max_length: int = 64
    warmup_ratio: float = 0.0
    grad_clip: float | None = 1.0
    temperature: float = 1.0
    normalize_logits: bool = False
    autocast: Literal["none", "bf16", "fp16"] = "none"
    checkpoint_every: int = 200
    device: str = "auto"
    lr_decay: LrDecay = "auto"
    weight_decay: float = 0.0
    bucket_batches: int = 50  # batches per length-sorted chunk (1 = no length bucketing)

    def __post_init__(self) -> None:
        validate_choice("method", self.method, METHODS)
        validate_choice("pooling", self.pooling, TRAIN_POOLINGS)
        validate_choice("autocast", self.autocast, _AUTOCASTS)
        validate_choice("lr_decay", self.lr_decay, get_args(LrDecay))
        for name in ("batch_size", "epochs", "max_length", "checkpoint_every", "bucket_batches"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if self.lr <= 0 or self.temperature <= 0:
            raise ValueError("lr and temperature must be > 0")
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise ValueError(f"grad_clip must be > 0 or None, got {self.grad_clip!r}")

    @property
    def resolved_lr_decay(self) -> str:
        if self.lr_decay != "auto":
            return self.lr_decay
        return "none" if self.method == "defsent" else "linear"


def paper_config(method: Method, n_examples: int | None = None, **overrides) -> TrainConfig:
    """The papers' settings for ``method``, with ``overrides`` on top.

    DefSent (Tsukagoshi et al. 2021): Adam, batch 16, one epoch, linear warm-up over 10%, no
    gradient clipping. DefSent+ (Liu 2024): AdamW (eps 1e-6), batch 32 (16 below
    ``SMALL_DATASET`` definitions), linear decay without warm-up, clipping at 1.0, one epoch.
    """
    validate_choice("method", method, METHODS)
    if method == "defsent":
        base = TrainConfig(method="defsent", batch_size=16, warmup_ratio=0.1, grad_clip=None, use_pooler=False)
    else:
        small = n_examples is not None and n_examples < SMALL_DATASET
        base = TrainConfig(method="defsent_plus", batch_size=16 if small else 32, warmup_ratio=0.0, grad_clip=1.0)
    return replace(base, **overrides)
