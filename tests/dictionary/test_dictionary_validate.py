from __future__ import annotations

import pytest

from defsentflow.dictionary import DefinitionRecord, check_record, check_text


@pytest.mark.parametrize("text, reason", [
    ("", "empty"),
    (" \t ", "whitespace_only"),
    ("ring\x07ing", "control_character"),
    ("two\nlines", "control_character"),
    ("c1 \x85 control", "control_character"),
    ("x" * 1001, "too_long"),
    (b"caf\xe9".decode("utf-8", "surrogateescape"), "invalid_utf8"),
])
def test_bad_text_has_its_reason(text, reason):
    assert check_text(text, "definition")[0] == reason


@pytest.mark.parametrize("text", ["x" * 1000, "naïve café — ‘quoted’", "a"])
def test_good_text_passes(text):
    assert check_text(text, "definition") is None


def test_record_check_names_the_field_and_keeps_raw():
    rej = check_record(DefinitionRecord("dog", "x" * 20, "tsv", "d.tsv", 4), max_chars=10)
    assert (rej.reason, rej.file, rej.line, rej.raw) == ("too_long", "d.tsv", 4, "dog\t" + "x" * 20)
    assert "definition has 20 characters" in rej.detail
    assert check_record(DefinitionRecord(" ", "fine", "tsv", "d.tsv", 1)).detail == "entry is only whitespace"
