"""Prefect wrappers of the pretraining stage's pieces: tasks, no decisions.

The order of the pieces is the library's (:func:`defsentflow.training.pretrain.run_pretrain`); the
``pretrain`` flow hands these executors to it, so the CLI's local mode and the Prefect flow run the
same code and write the same catalog rows. Caching and resume are the library's content keys (an
ingested corpus or a registered model is found, a killed training resumes from its checkpoint); the
Prefect tasks add visibility, logs and retries (:mod:`tasks.retries`: the corpus after a delay, the
training once, resuming its checkpoint), not a second set of keys.
"""

from __future__ import annotations

from defsentflow.tasks.retries import IO_RETRIES, TRAIN_RETRIES
from defsentflow.tasks.step import step_task
from defsentflow.training.pretrain import PretrainSteps, ingest_corpus_step, train_or_find

__all__ = ["PRETRAIN_TASKS"]

PRETRAIN_TASKS = PretrainSteps(
    ingest_corpus=step_task(ingest_corpus_step, "ingest-corpus", retries=IO_RETRIES),
    train=step_task(train_or_find, "pretrain-encoder", retries=TRAIN_RETRIES),
)
