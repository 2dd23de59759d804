"""Prefect flows: one per stage plus the pipeline that chains them. They only sequence tasks.

Importing this package sets Prefect's environment defaults BEFORE Prefect is imported: no
telemetry, a generous start-up timeout for the temporary server on small machines, and Prefect's
home and persisted task results under the data root, so a cache survives a new machine that
has the storage directory.
"""

from __future__ import annotations

from defsentflow.tasks._env import configure_prefect_env

configure_prefect_env()
