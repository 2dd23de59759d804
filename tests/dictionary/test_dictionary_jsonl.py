from __future__ import annotations

import json

import pytest

from defsentflow.dictionary import RejectedRecord, read_jsonl


def test_reads_objects_keeping_extra_keys_as_metadata(write):
    line = {"entry": "dog", "definition": "a canid", "pos": "n", "examples": ["the dog barked"], "freq": 12,
            "tags": json.dumps(["animal"])}
    path = write("d.jsonl", json.dumps(line) + "\n")
    (rec,) = read_jsonl(path)
    assert (rec.entry, rec.definition, rec.pos, rec.examples, rec.line) == ("dog", "a canid", "n", ("the dog barked",), 1)
    assert rec.meta == {"freq": 12, "tags": '["animal"]'}


@pytest.mark.parametrize("line, detail", [
    ('{"entry": "dog"', "invalid JSON"),
    ('["dog", "a canid"]', "expected a JSON object"),
    ('{"entry": "dog"}', "missing key 'definition'"),
    ('{"entry": 3, "definition": "x"}', "'entry' must be a string"),
    ('{"entry": "dog", "definition": "x", "examples": "one"}', "'examples' must be a list"),
])
def test_malformed_lines_are_rejected_with_line_and_reason(write, line, detail):
    path = write("d.jsonl", '{"entry": "cat", "definition": "feline"}\n' + line + "\n")
    recs = list(read_jsonl(path))
    assert isinstance(recs[1], RejectedRecord)
    assert (recs[1].reason, recs[1].line, recs[1].file) == ("malformed", 2, str(path))
    assert detail in recs[1].detail and recs[1].raw == line
