"""Prefect wrappers of the dictionary ingest's pieces: tasks, no decisions.

The order is the library's (:func:`defsentflow.dictionary.ingest_dictionary`); the
``ingest-dictionary`` flow hands it :data:`DICTIONARY_TASKS`. Reuse is the library's too: a dataset
registered under its content key is not ingested again, and an artifact found under its key is
registered, not rebuilt, the same under ``defsentflow ingest``, a flow and a deployment.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from defsentflow.dictionary import build_dictionary, register_dictionary
from defsentflow.dictionary.ingest import DictionarySteps
from defsentflow.tasks.retries import IO_RETRIES

__all__ = ["DICTIONARY_TASKS"]

DICTIONARY_TASKS = DictionarySteps(
    build=task(name="build-dictionary", cache_policy=NO_CACHE, **IO_RETRIES)(build_dictionary),
    register=task(name="register-dictionary", cache_policy=NO_CACHE, **IO_RETRIES)(register_dictionary),
)
