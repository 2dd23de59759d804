from __future__ import annotations

import argparse

import pytest

from defsentflow.cli import UserError
from defsentflow.cli.ingest_corpus import register_corpus


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="defsentflow")
    ingest = parser.add_subparsers(dest="command").add_parser("ingest").add_subparsers(dest="what")
    register_corpus(ingest)
    return parser


def test_ingest_corpus_command(home, tmp_path, capsys):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "one.txt").write_text("A first document. It has two sentences.\n\nAnd a paragraph.\n")
    (d / "two.txt").write_text("")
    args = _parser().parse_args(["ingest", "corpus", str(d), "--name", "docs", "--workers", "1", "--index", "bm25"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "docs" in out and "built" in out and "index bm25: built" in out and "quarantine" in out
    assert args.func(args) == 0
    assert "cached" in capsys.readouterr().out


def test_bad_input_is_a_user_error(home, tmp_path):
    args = _parser().parse_args(["ingest", "corpus", str(tmp_path / "nope"), "--name", "x"])
    with pytest.raises(UserError, match="not found"):
        args.func(args)
    with pytest.raises(SystemExit):
        _parser().parse_args(["ingest", "corpus", str(tmp_path), "--name", "x", "--format", "csv"])
