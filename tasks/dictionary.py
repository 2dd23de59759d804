"""Prefect wrappers of the dictionary ingest's pieces: tasks, no decisions.

The order is the library's (:func:`defsentflow.dictionary.ingest_dictionary`); the
``ingest-dictionary`` flow hands it :data:`DICTIONARY_TASKS`. Reuse is the library's too: a dataset
registered under its content key is not ingested again, and an artifact found under its key is
registered, not rebuilt, the same under ``defsentflow ingest``, a flow and a deployment.
"""

from __future__ import annotations

from defsentflow.dictionary import build_dictionary, register_dictionary
from defsentflow.dictionary.ingest import DictionarySteps
from defsentflow.tasks.retries import IO_RETRIES
from defsentflow.tasks.step import step_task

__all__ = ["DICTIONARY_TASKS"]

DICTIONARY_TASKS = DictionarySteps(
    build=step_task(build_dictionary, "build-dictionary", retries=IO_RETRIES),
    register=step_task(register_dictionary, "register-dictionary", retries=IO_RETRIES),
)
