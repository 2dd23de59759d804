"""The one id rule: a model's id names its content; names scoped to a run are aliases."""

from __future__ import annotations

from defsentflow.encoders.loading import BUNDLED_ALIASES, portable_model_name, resolve_model_path
from defsentflow.model.ids import (
    BUNDLED_NAMES,
    base_model_id,
    model_slot,
    named_model_id,
    pooled_model_id,
    run_alias,
    trained_model_id,
)


def test_ids_by_content_and_by_the_name_a_user_passes():
    assert trained_model_id("defsent_plus", "2d352f6268e394a9") == "dsp-2d352f6268e3"
    assert trained_model_id("defsent", "abc123456789xyz") == "defsent-abc123456789"
    assert named_model_id("raw-ci", "0123456789abcdef") == "raw-ci-0123456789"
    assert base_model_id("/models/bert-base-uncased/") == "base:bert-base-uncased"
    assert base_model_id("sentence-transformers/all-MiniLM-L6-v2") == "base:all-MiniLM-L6-v2"
    assert {base_model_id(a) for a in BUNDLED_ALIASES} == {"base:all-MiniLM-L6-v2"} and set(BUNDLED_NAMES) == set(BUNDLED_ALIASES)
    assert run_alias("demo-1a2b3c4d") == "pst-demo-1a2b3c4d"
    assert pooled_model_id("base:all-MiniLM-L6-v2", "cls") == "base:all-MiniLM-L6-v2+cls"
    assert model_slot("defsent_plus", "ab" * 16).model_id == trained_model_id("defsent_plus", "ab" * 16)


def test_the_bundled_model_is_named_not_found_by_its_install_path(tmp_path):
    """Wherever this virtual environment installed the bundled checkpoint, a record names it ``minilm``."""
    assert portable_model_name(resolve_model_path("minilm")) == "minilm"
    assert portable_model_name("minilm") == "minilm" and portable_model_name("org/model") == "org/model"
    assert portable_model_name(str(tmp_path)) == str(tmp_path)  # a user's folder stays as given
