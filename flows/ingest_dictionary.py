"""The ``ingest-dictionary`` flow: dictionary sources -> a named dataset in the catalog.

The sequence is the library's :func:`defsentflow.dictionary.ingest_dictionary`; this flow hands it
the pieces as Prefect tasks (``tasks/dictionary.py``).
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.dictionary import DictionaryConfig, IngestResult, ingest_dictionary
from defsentflow.tasks.dictionary import DICTIONARY_TASKS

__all__ = ["ingest_dictionary_flow"]


@flow(name="ingest-dictionary", log_prints=True)
def ingest_dictionary_flow(config: dict[str, Any], run_id: str | None = None) -> IngestResult:
    """Build and register the dataset of ``config`` (a dict validated as ``DictionaryConfig``).

    Cached by the sources' content hashes, the parameters and the code version: a second run on
    unchanged sources finds the dataset registered and runs no task. A missing source fails before
    any task runs.
    """
    result = ingest_dictionary(DictionaryConfig.model_validate(config), run_id=run_id, steps=DICTIONARY_TASKS)
    s = result.summary
    print(f"dictionary {result.name} ({result.status}): {s['entries']} entries, {s['definitions']} definitions, "
          f"{s['quarantined']} quarantined")
    return result
