"""Fixtures for the end-to-end tests."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tiny_pipeline_utils import run_cli, tiny_config


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory, tiny_bert_dir) -> Path:
    tmp = tmp_path_factory.mktemp("tiny-pipeline")
    return tiny_config(tmp, tiny_bert_dir)


@pytest.fixture(scope="session")
def raw_ci_home(tmp_path_factory) -> Path:
    """One data root for the positive controls: the raw-ci encoder is pretrained once for both."""
    return tmp_path_factory.mktemp("raw-ci") / "home"


@pytest.fixture(scope="session")
def tiny_first_run(tmp_path_factory, tiny_bert_dir) -> tuple[Path, Path, float]:
    """One finished ``defsentflow run`` of the tiny pipeline: the kill test's uninterrupted reference,
    then the root the rerun test runs a second time (both in ``xdist_group("tiny-run")``, so one
    process runs it once): (config, data root, seconds)."""
    tmp = tmp_path_factory.mktemp("tiny-first-run")
    config = tiny_config(tmp, tiny_bert_dir)
    home = tmp / "home"
    t0 = time.monotonic()
    res = run_cli(["run", str(config)], home)
    assert res.returncode == 0, res.stderr[-3000:]
    return config, home, time.monotonic() - t0

