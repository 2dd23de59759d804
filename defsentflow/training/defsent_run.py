"""One DefSent (word prediction) or DefSent+ (entry prediction) training run, without PST."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from defsentflow.encoders import resolve_model_path
from defsentflow.model.record import read_model_record
from defsentflow.storage import Catalog, data_root, hash_config
from defsentflow.training.candidate import TrainSpec, plan_training, train_candidate
from defsentflow.training.data import load_training_data, splits_for
from defsentflow.training.entry_matrix import build_entry_matrix
from defsentflow.training.keys import base_model_of
from defsentflow.training.pst_config import DefSentSection
from defsentflow.training.pst_records import DefSentResult
from defsentflow.training.step_plan import base_name_or_path

__all__ = ["DefSentSteps", "run_defsent"]


@dataclass(frozen=True)
class DefSentSteps:
    """How a DefSent run's pieces run: plain calls by default; the ``train-defsent`` flow passes
    the same functions wrapped as Prefect tasks."""

    build_matrix: Callable[..., Any] = build_entry_matrix
    train: Callable[..., dict[str, Any]] = train_candidate


def run_defsent(section: DefSentSection, *, run_id: str | None, root: str | os.PathLike | None = None,
                steps: DefSentSteps = DefSentSteps()) -> DefSentResult:
    """Train one DefSent (word prediction) or DefSent+ (entry prediction) model; cached by content key.

    DefSent keeps only training definitions whose entry is a single vocabulary token (the frozen
    word-prediction layer can only predict those), before ``max_train_entries`` takes its subset. With a ``run_id`` the run is recorded, with a
    ``train-defsent`` stage row keyed by the model's artifact key (a reused model included), which
    ties the model to the run for ``best-model``; with None nothing is written but the model.
    """
    t0 = time.perf_counter()
    cat = Catalog(root)
    with cat.recorded_run(f"train-{section.method.replace('_', '-')}", run_id, config=section.model_dump(mode="json"),
                          config_hash=hash_config(section)) as run:
        # DefSent's cap counts the entries it can predict (one vocabulary token), as DefSent+'s counts its own
        only = resolve_model_path(base_model_of(section)[0]) if section.method == "defsent" else None
        data = load_training_data(section.dictionary, section.max_train_entries,
                                  splits=splits_for(section.train_entries), root=root, single_token_of=only)
        matrix = None
        if section.method == "defsent_plus":
            matrix = steps.build_matrix(section, data, encoder=base_name_or_path(section),
                                        encoder_id=base_model_of(section)[1], encoding=section.entry_encoding,
                                        ica=section.ica, root=root, run_id=run_id)
        spec: TrainSpec = plan_training(section, data, method=section.method, pooling=section.pooling, lr=section.lr,
                                        seed=section.seed, matrix=matrix, root=root)
        cat.register_records([steps.train(spec, root=str(data_root(root)), run_id=run_id)])
        key, model_id, model_dir = spec.slot.key, spec.slot.model_id, str(data_root(root) / spec.slot.folder)
        trained = read_model_record(model_dir)
        if run_id is not None:
            cat.record_stage(run_id, "train-defsent", "completed", cache_key=key, seconds=time.perf_counter() - t0,
                             note=model_id)
        run.note = f"trained {model_id}"
    return DefSentResult(run_id=run_id or "", model_id=model_id, model_dir=model_dir, method=section.method,
                         n_definitions=int(trained.n_examples or 0) if trained else 0,
                         entry_matrix_path=matrix.path if matrix is not None else None,
                         seconds=time.perf_counter() - t0)

