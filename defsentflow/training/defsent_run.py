"""One DefSent (word prediction) or DefSent+ (entry prediction) training run, without PST."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from defsentflow.storage import Catalog, hash_config
from defsentflow.training.data import TrainingData, load_training_data, splits_for
from defsentflow.training.pst_config import DefSentSection
from defsentflow.training.pst_records import DefSentResult
from defsentflow.training.pst_steps import _base, _config_identity, _key, _train_config, build_entry_matrix, train_model
from defsentflow.training.targets import single_token_targets

__all__ = ["DefSentSteps", "run_defsent"]


@dataclass(frozen=True)
class DefSentSteps:
    """How a DefSent run's pieces run: plain calls by default; the ``train-defsent`` flow passes
    the same functions wrapped as Prefect tasks."""

    build_matrix: Callable[..., Any] = build_entry_matrix
    train: Callable[..., tuple[str, str]] = train_model


def run_defsent(section: DefSentSection, *, run_id: str | None, root: str | os.PathLike | None = None,
                steps: DefSentSteps = DefSentSteps()) -> DefSentResult:
    """Train one DefSent (word prediction) or DefSent+ (entry prediction) model; cached by content key.

    DefSent keeps only training definitions whose entry is a single vocabulary token (the frozen
    word-prediction layer can only predict those). With a ``run_id`` the run is recorded, with a
    ``train-defsent`` stage row keyed by the model's artifact key (a reused model included), which
    ties the model to the run for ``best-model``; with None nothing is written but the model.
    """
    t0 = time.perf_counter()
    cat = Catalog(root)
    with cat.recorded_run(f"train-{section.method.replace('_', '-')}", run_id, config=section.model_dump(mode="json"),
                          config_hash=hash_config(section)) as run:
        data = load_training_data(section.dictionary, section.max_train_entries,
                                  splits=splits_for(section.train_entries), root=root)
        base, base_hash = _base(section)
        matrix_path = None
        extra: dict[str, Any] = {"dictionary": section.dictionary, "train_splits": list(data.splits)}
        if section.method == "defsent_plus":
            cfg = _train_config(section, method=section.method, pooling=section.pooling, lr=section.lr,
                                seed=section.seed, variant=data.variant)
            matrix = steps.build_matrix(section, data, encoder=base, encoder_id=base_hash,
                                        encoding=section.entry_encoding, ica=section.ica, root=root, run_id=run_id)
            definitions, targets, matrix_path = data.definitions, data.targets, str(matrix.matrix_path)
            key = _key("pst_model", base_hash, matrix.key, data.train_hash, _config_identity(cfg))
            extra.update(entry_encoder=base, entry_encoding=section.entry_encoding, ica=section.ica,
                         normalize_logits=section.normalize_logits, entry_matrix=matrix_path)
        else:
            definitions, targets = _single_token_pairs(base, data)
            cfg = _train_config(section, method=section.method, pooling=section.pooling, lr=section.lr,
                                seed=section.seed, variant=data.variant)
            key = _key("defsent_model", base_hash, data.train_hash, _config_identity(cfg))
        model_id, model_dir = steps.train(cfg, base, definitions, targets, key=key, entry_matrix_path=matrix_path,
                                          extra_meta=extra, method=section.method, base_name=section.base_model,
                                          root=root, run_id=run_id)
        if run_id is not None:
            cat.record_stage(run_id, "train-defsent", "completed", cache_key=key, seconds=time.perf_counter() - t0,
                             note=model_id)
        run.note = f"trained {model_id}"
    return DefSentResult(run_id=run_id or "", model_id=model_id, model_dir=model_dir, method=section.method,
                         n_definitions=len(definitions), entry_matrix_path=matrix_path,
                         seconds=time.perf_counter() - t0)


def _single_token_pairs(base: str, data: TrainingData) -> tuple[list[str], list[int]]:
    """DefSent's training pairs: definitions of single-token entries, targets = vocabulary ids."""
    from transformers import (
        AutoTokenizer,  # lazy: transformers takes seconds to load; only code that loads a model needs it
    )

    tokenizer = AutoTokenizer.from_pretrained(base)
    mask, ids = single_token_targets(tokenizer, data.entries)
    keep = [i for i, t in enumerate(data.targets) if mask[t]]
    if not keep:
        raise ValueError(f"no training entry of {data.dictionary!r} is a single token of {base}'s vocabulary")
    return [data.definitions[i] for i in keep], [int(ids[data.targets[i]]) for i in keep]
