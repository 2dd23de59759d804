"""The command line's arguments: every sub-command's ``--help``, argparse errors (exit 2), unknown commands.

Parsing happens before any handler runs, so none of these tests loads a model or touches a catalog.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from defsentflow.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every command path (``("ingest", "dictionary")``, ...) with the help line its parent lists."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*prefix, name), helps.get(name)
                yield from _commands(sub, (*prefix, name))


COMMANDS = dict(_commands(build_parser()))


def test_the_walk_finds_nested_commands():
    assert {("ingest", "dictionary"), ("ingest", "corpus"), ("train", "pst"), ("train", "surrogate"),
            ("sweep", "run"), ("run",), ("eval",)} <= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS), ids=" ".join)
def test_every_command_has_help(command, capsys):
    assert COMMANDS[command], f"'{' '.join(command)}' has no one-line help in its parent's listing"
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: defsentflow {' '.join(command)} ")


def test_building_the_parser_imports_nothing_heavy():
    code = ("import sys; from defsentflow.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'transformers', 'prefect', 'duckdb') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "[]"


ARGPARSE_ERRORS = [
    ([], "the following arguments are required: COMMAND"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["train"], "the following arguments are required: KIND"),
    (["train", "bert"], "invalid choice: 'bert'"),
    (["ingest", "wordlist"], "invalid choice: 'wordlist'"),
    (["sweep"], "the following arguments are required: SUBCOMMAND"),
    (["sweep", "plot", "s.yaml"], "invalid choice: 'plot'"),
    (["ingest", "dictionary", "--name", "x"], "the following arguments are required: --source"),
    (["ingest", "dictionary", "--name", "x", "--source", "tsv", "a.tsv", "--seed", "abc"], "--seed: invalid int value: 'abc'"),
    (["ingest", "dictionary", "--name", "x", "--source", "tsv", "a.tsv", "--variant", "z"], "--variant: invalid choice: 'z'"),
    (["ingest", "corpus", "docs", "--name", "x", "--format", "doc"], "--format: invalid choice: 'doc'"),
    (["ingest", "corpus", "docs"], "the following arguments are required: --name"),
    (["encode", "model"], "the following arguments are required: --input, --out"),
    (["revdict", "model"], "the following arguments are required: definition"),
    (["eval"], "the following arguments are required: model"),
    (["report"], "the following arguments are required: run_id"),
    (["train", "pst"], "the following arguments are required: config"),
    (["best-model", "c.yaml", "--stage", "final"], "--stage: invalid choice: 'final'"),
    (["sql", "SELECT 1", "--bogus"], "unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize("argv, message", ARGPARSE_ERRORS, ids=lambda v: (" ".join(v) or "(nothing)") if isinstance(v, list) else None)
def test_argument_errors_exit_2_with_usage(argv, message, home, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: defsentflow") and message in err
    assert not any(home.iterdir()), "a rejected command line wrote to the data root"


def test_the_process_exit_status_of_an_unknown_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "defsentflow.cli", "frobnicate"], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "DEFSENTFLOW_HOME": str(tmp_path)})
    assert out.returncode == 2
    assert "invalid choice: 'frobnicate'" in out.stderr and "Traceback" not in out.stderr
