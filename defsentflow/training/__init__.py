"""One training loop for DefSent and DefSent+, entry embeddings, backbone adapters and heads."""

from __future__ import annotations

from defsentflow.model.adapters import ADAPTERS, BackboneAdapter, PreparedBackbone, adapter_for, prepare_backbone
from defsentflow.model.entry_matrix import EntryMatrix
from defsentflow.model.ica import IcaTransform
from defsentflow.model.targets import entry_targets, single_token_targets
from defsentflow.training.batching import TokenizedExamples, length_bucketed_batches, tokenize_examples
from defsentflow.training.checkpoint import capture_rng, load_checkpoint, restore_rng, save_checkpoint, seed_everything
from defsentflow.training.config import (
    ENTRY_ENCODINGS,
    METHODS,
    EntryEncoding,
    Method,
    TrainConfig,
    paper_config,
)
from defsentflow.training.entry_matrix import encode_entry_matrix
from defsentflow.training.heads import DefinitionClassifier
from defsentflow.training.loop import (
    LoopOutcome,
    TrainResult,
    build_optimizer,
    linear_schedule,
    run_loop,
    train_encoder,
)

__all__ = [
    "ADAPTERS",
    "BackboneAdapter",
    "DefinitionClassifier",
    "ENTRY_ENCODINGS",
    "EntryEncoding",
    "EntryMatrix",
    "IcaTransform",
    "LoopOutcome",
    "METHODS",
    "Method",
    "PreparedBackbone",
    "TokenizedExamples",
    "TrainConfig",
    "TrainResult",
    "adapter_for",
    "build_optimizer",
    "capture_rng",
    "encode_entry_matrix",
    "entry_targets",
    "length_bucketed_batches",
    "linear_schedule",
    "load_checkpoint",
    "paper_config",
    "prepare_backbone",
    "restore_rng",
    "run_loop",
    "save_checkpoint",
    "seed_everything",
    "single_token_targets",
    "tokenize_examples",
    "train_encoder",
]
