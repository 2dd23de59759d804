"""``create_file_once``: a new file whole or not at all, never over one that is there."""

from __future__ import annotations

from pathlib import Path

from defsentflow.storage.swap import create_file_once


def test_a_new_file_is_made_whole_and_nothing_else_is_left(tmp_path):
    final = tmp_path / "f.bin"
    assert create_file_once(final, lambda tmp: tmp.write_bytes(b"abc"))
    assert final.read_bytes() == b"abc" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_never_over_a_file_that_is_there(tmp_path):
    final = tmp_path / "f.bin"
    final.write_bytes(b"theirs")
    assert not create_file_once(final, lambda tmp: tmp.write_bytes(b"mine"))
    assert final.read_bytes() == b"theirs" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_a_write_that_fails_leaves_nothing(tmp_path):
    def half(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise OSError("disk full")

    assert not create_file_once(tmp_path / "f.bin", half) and list(tmp_path.iterdir()) == []
    assert not create_file_once(tmp_path / "missing" / "f.bin", lambda tmp: tmp.write_bytes(b"x"))
