"""Flows run against a temporary Prefect database (one server for the whole session)."""

from __future__ import annotations

import os
import tempfile

import pytest

# Before Prefect is imported: no telemetry, and Prefect's home and persisted task results in a
# throw-away directory, so no cached result from another session (or the user's ./storage) leaks in.
_PREFECT_TMP = tempfile.mkdtemp(prefix="defsentflow-prefect-")
os.environ["PREFECT_HOME"] = os.path.join(_PREFECT_TMP, "home")
os.environ["PREFECT_LOCAL_STORAGE_PATH"] = os.path.join(_PREFECT_TMP, "results")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


@pytest.fixture(scope="session", autouse=True)
def prefect_test_harness():
    """A temporary Prefect database and API server for every flow test in the session."""
    from prefect.testing.utilities import prefect_test_harness as harness

    with harness(server_startup_timeout=None):
        yield
