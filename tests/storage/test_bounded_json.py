"""JSON from outside: nesting and size bounded, one-line errors naming the file."""

from __future__ import annotations

import pytest

from defsentflow.limits import LIMITS
from defsentflow.storage.bounded_json import NestingError, loads_bounded, read_json_file


def test_nesting_is_bounded_whatever_the_depth():
    n = LIMITS["nesting"]
    assert loads_bounded("[" * n + "]" * n) is not None
    for depth in (n + 1, 900, 100_000):  # below, near and past Python's own recursion limit
        with pytest.raises(NestingError, match=f"nested deeper than {n} levels"):
            loads_bounded("[" * depth + "]" * depth)
    assert loads_bounded('{"a": "' + "[" * 1000 + '"}') == {"a": "[" * 1000}  # brackets inside a string


def test_files_are_bounded_and_named(tmp_path):
    f = tmp_path / "r.json"
    f.write_text('{"a": 1}')
    assert read_json_file(f, max_bytes=100) == {"a": 1}
    with pytest.raises(ValueError, match=r"r\.json: the record has 8 bytes \(limit 4\)"):
        read_json_file(f, max_bytes=4, what="record")
    f.write_bytes(b"\xff")
    with pytest.raises(ValueError, match="is not UTF-8"):
        read_json_file(f, max_bytes=100)
    link = tmp_path / "l.json"
    link.symlink_to(tmp_path / "r.json")
    with pytest.raises(ValueError, match="not a regular file"):
        read_json_file(link, max_bytes=100)
