"""The head of a model folder: one function and one table of defaults for every reader."""

from __future__ import annotations

import pytest

from defsentflow.model import HEAD_DEFAULTS, model_head, write_model_record


def test_a_model_without_a_record_is_a_bare_encoder(tmp_path):
    """A hub checkpoint, minilm, PST's step 0: the table's defaults, whoever asks (evaluation, the
    served index and word prediction used to read True, 'has a pooler' and False for use_pooler)."""
    head = model_head(tmp_path)
    assert (head.pooling, head.use_pooler, head.entry_encoding, head.ica, head.normalize_logits) == \
           (HEAD_DEFAULTS["pooling"], False, "amp", False, False)
    assert not head.trained and head.entry_matrix is None and head.entry_encoder is None
    assert model_head("minilm", pooling="cls").entry_encoding == "ac"  # the entries its pooling encodes


def test_the_record_says_what_it_was_trained_with(tmp_path):
    root = tmp_path / "root"
    model = root / "models" / "pst" / "k"
    write_model_record(model, {"pooling": "cls", "use_pooler": True, "pooler_activation": "gelu",
                               "entry_encoding": "amp", "entry_encoder": "minilm", "ica": True,
                               "entry_matrix": "../../../pst/entry_matrices/m", "normalize_logits": True})
    head = model_head(model)
    assert head.trained and head.pooling == "cls" and head.use_pooler and head.pooler_activation == "gelu"
    assert head.entry_encoding == "amp" and head.entry_pooling == "mean" and head.entry_encoder == "minilm"
    assert head.ica and head.normalize_logits
    assert head.entry_matrix == (root / "pst" / "entry_matrices" / "m").resolve()
    # the caller's choice overrides the record (an evaluation's pooling), what neither says is the table's
    assert model_head(model, pooling="mean", use_pooler=False).use_pooler is False
    with pytest.raises(ValueError, match="entry_encoding must be one of"):
        model_head(model, entry_encoding="cls")


def test_nothing_outside_the_model_package_parses_the_record():
    """No module outside defsentflow/model reads defsentflow.json itself."""
    import re
    from pathlib import Path

    lib = Path(__file__).resolve().parents[2]
    found = [f"{p.relative_to(lib)}" for d in ("defsentflow", "flows", "tasks", "bench") for p in (lib / d).rglob("*.py")
             if "model" not in p.relative_to(lib).parts[:2]
             and re.search(r"""["']defsentflow\.json["']\s*\)?\s*\)?\.read_|RECORD_FILE\)\.read|json\.load[s]?\([^)]*defsentflow\.json""",
                           p.read_text(encoding="utf-8"))]
    assert not found, found
