"""Prefect settings this project relies on, applied before Prefect is imported."""

from __future__ import annotations

import os

from defsentflow.storage.paths import data_root, root_place

_DEFAULTS = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "true",
    "PREFECT_UI_ENABLED": "false",
    "PREFECT_LOGGING_TO_API_BATCH_INTERVAL": "0.5",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def configure_prefect_env() -> None:
    """Set defaults (never overriding the user's own settings)."""
    for key, value in _DEFAULTS.items():
        os.environ.setdefault(key, value)
    root = data_root(create=False)  # importing the flows creates nothing
    os.environ.setdefault("PREFECT_HOME", str(root_place(root, "prefect")))
    os.environ.setdefault("PREFECT_LOCAL_STORAGE_PATH", str(root_place(root, "prefect", "results")))
