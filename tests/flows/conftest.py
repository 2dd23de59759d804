"""Every test here runs a flow: the session's Prefect test server (tests/conftest.py) for all."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _prefect(prefect_test_harness):
    yield
