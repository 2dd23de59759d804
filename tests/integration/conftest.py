"""Fixtures for the end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_pipeline_utils import tiny_config


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory, tiny_bert_dir) -> Path:
    tmp = tmp_path_factory.mktemp("tiny-pipeline")
    return tiny_config(tmp, tiny_bert_dir)


@pytest.fixture(scope="session")
def raw_ci_home(tmp_path_factory) -> Path:
    """One data root for the positive controls: the raw-ci encoder is pretrained once for both."""
    return tmp_path_factory.mktemp("raw-ci") / "home"
