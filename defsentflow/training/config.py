"""The settings of one training run (DefSent, DefSent+; the loop is shared), and the papers' defaults.

A :class:`TrainConfig` is what :func:`~defsentflow.training.loop.train_encoder` runs. It is not a
config section of its own: PST and DefSent runs derive one per candidate from their ``pst:`` /
``defsent:`` section (:func:`paper_config` plus what the section sets), so it is a frozen, strict
pydantic model like the sections, validated once.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator, model_serializer

from defsentflow.config_tools import Autocast, ConfigSection, EntryEncoding, Method, TrainPooling
from defsentflow.model.head import ENTRY_POOLING  # the one table (the model's head): AC averages CLS, AMP mean

__all__ = [
    "Method",
    "EntryEncoding",
    "LrDecay",
    "METHODS",
    "ENTRY_ENCODINGS",
    "ENTRY_POOLING",
    "TRAIN_POOLINGS",
    "TrainConfig",
    "paper_batch_size",
    "paper_config",
    "validate_choice",
    "check_negatives",
    "sampled_negatives",
]

LrDecay = Literal["auto", "linear", "none"]

METHODS: tuple[str, ...] = get_args(Method)
ENTRY_ENCODINGS: tuple[str, ...] = get_args(EntryEncoding)
TRAIN_POOLINGS: tuple[str, ...] = get_args(TrainPooling)


def validate_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    """Reject a wrong choice string with the list of valid ones."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_negatives(v: str) -> str:
    """``full`` (softmax over every entry) or ``sampled K`` (the batch's targets and K uniformly
    sampled entries, negatives' logits corrected by ``log(N/K)``)."""
    parts = str(v).split()
    if parts == ["full"] or (len(parts) == 2 and parts[0] == "sampled" and parts[1].isdigit() and int(parts[1]) >= 1):
        return " ".join(parts)
    raise ValueError(f"negatives must be 'full' or 'sampled K' (K >= 1, e.g. 'sampled 65536'), got {v!r}")


def sampled_negatives(v: str) -> int | None:
    """K of ``sampled K``; None for ``full``."""
    return int(v.split()[1]) if v != "full" else None


def drop_full_negatives(data):
    """``negatives: full`` and an unset ``mlm_dense_from`` are left out of dumps, so configs (and artifact
    keys) from before those options keep their hashes."""
    if isinstance(data, dict) and data.get("negatives") == "full":
        data.pop("negatives")
    if isinstance(data, dict) and "mlm_dense_from" in data and data["mlm_dense_from"] is None:
        data.pop("mlm_dense_from")
    return data


class TrainConfig(ConfigSection):
    """Hyper-parameters of one training run (both methods share the loop).

    ``use_pooler`` applies to DefSent+ only: DefSent feeds the pooled vector straight to the
    word-prediction layer, as in the paper. ``lr_decay="auto"`` follows the papers: DefSent warms
    up linearly over ``warmup_ratio`` and then keeps the rate constant (the reference code's
    schedule); DefSent+ decays linearly to zero. The optimizer follows the method too: Adam for
    DefSent, AdamW (eps 1e-6) for DefSent+.

    Example:
        >>> cfg = TrainConfig(method="defsent", pooling="cls", batch_size=16, warmup_ratio=0.1)
        >>> cfg.resolved_lr_decay
        'none'
    """

    method: Method = "defsent_plus"
    pooling: TrainPooling = "mean"
    use_pooler: bool = True
    untrained_pooler: Literal["mlm_dense", "random"] = "mlm_dense"  # a checkpoint that never trained its pooler
    mlm_dense_from: str | None = None  # the raw checkpoint whose MLM dense starts a foreign checkpoint's pooler
    lr: float = Field(2e-5, gt=0)
    batch_size: int = 32
    epochs: int = 1
    seed: int = 0
    max_length: int = 64
    warmup_ratio: float = 0.0
    grad_clip: float | None = Field(1.0, gt=0)
    temperature: float = Field(1.0, gt=0)
    normalize_logits: bool = False
    autocast: Autocast = "none"
    checkpoint_every: int = 200
    device: str = "auto"
    lr_decay: LrDecay = "auto"
    weight_decay: float = 0.0
    bucket_batches: int = 50  # batches per length-sorted chunk (1 = no length bucketing)
    negatives: str = "full"  # DefSent+: "full" softmax over every entry, or "sampled K"

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return drop_full_negatives(handler(self))

    @field_validator("negatives")
    @classmethod
    def _negatives(cls, v: str) -> str:
        return check_negatives(v)

    @field_validator("batch_size", "epochs", "max_length", "checkpoint_every", "bucket_batches")
    @classmethod
    def _positive(cls, v: int, info) -> int:
        if v < 1:
            raise ValueError(f"{info.field_name} must be >= 1, got {v!r}")
        return v

    @field_validator("warmup_ratio")
    @classmethod
    def _warmup(cls, v: float) -> float:
        if not 0.0 <= v < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {v!r}")
        return v

    @property
    def resolved_lr_decay(self) -> str:
        if self.lr_decay != "auto":
            return self.lr_decay
        return "none" if self.method == "defsent" else "linear"


def paper_batch_size(method: str, variant: str | None) -> int:
    """The papers' batch size: DefSent 16 (Tsukagoshi et al. 2021, Sec. 4.1); DefSent+ 32 on
    dataset a and 16 on datasets b and c (Liu 2024, Sec. 4.1). ``variant`` is the dictionary
    dataset's variant (``a``/``b``/``c``, :mod:`defsentflow.dictionary`); unknown counts as a."""
    if method == "defsent":
        return 16
    return 16 if variant in ("b", "c") else 32


def paper_config(method: str, variant: str | None = None, **overrides) -> TrainConfig:
    """The papers' settings for ``method`` on a dictionary of ``variant``, with ``overrides`` on top.

    DefSent (Tsukagoshi et al. 2021): Adam, batch 16, one epoch, linear warm-up over 10%, no
    gradient clipping. DefSent+ (Liu 2024 and its reference code): AdamW (eps 1e-6), batch 32 on
    dataset a and 16 on b and c (:func:`paper_batch_size`), linear decay without warm-up, clipping
    at 1.0, one epoch.
    """
    validate_choice("method", method, METHODS)
    if method == "defsent":
        base = dict(method="defsent", batch_size=16, warmup_ratio=0.1, grad_clip=None, use_pooler=False)
    else:
        base = dict(method="defsent_plus", batch_size=paper_batch_size(method, variant), warmup_ratio=0.0,
                    grad_clip=1.0)
    return TrainConfig(**{**base, **overrides})
