"""The golden figures file itself (tests/golden/figures.yaml): cheap checks that run on every suite run.

A golden value changes only in a commit that says why: every value must be the new value of the newest
CHANGELOG.md line that names its figure (``| `name` | old | new | why |`` or ``` `name` old -> new ```),
so editing a value (by 1.0 or by 0.01), or reverting it to that line's old value, fails here at once,
naming the figure, even where the run that measures it is skipped. The runs themselves compare with the file
through :func:`tests.golden.expect_figure`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.golden import CHANGELOG, FILE, changelog_move, expect_figure, golden_figures, golden_value_error

REPO = Path(__file__).resolve().parents[2]
FIGURES = golden_figures()


def _literal(name: str) -> str:
    """The value as written in figures.yaml (so 44.50 stays "44.50")."""
    m = re.search(rf"^  {re.escape(name)}:\n(?:    .*\n)*?    value: ([^\s#]+)", FILE.read_text(), flags=re.M)
    assert m, f"{name}: no value line in {FILE.name}"
    return m.group(1)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_golden_value_is_stated_in_the_changelog(name):
    """The value is the NEW value of the newest CHANGELOG.md line naming the figure; its old value (a
    revert to it) fails, naming the figure (issue 57: any number on that line used to pass)."""
    text = CHANGELOG.read_text()
    error = golden_value_error(name, _literal(name), text)
    assert error is None, error + "; a golden value moves only with a CHANGELOG.md line saying which change moved it"
    old = changelog_move(name, text)[0]
    if old is not None:
        reverted = golden_value_error(name, old, text)
        assert reverted is not None and name in reverted and "a revert" in reverted


def test_the_changelog_convention_reads_the_new_value_of_the_newest_line():
    text = ("## newer\n- `x.y` 47.59 -> 48.10 (a fix)\n| `z` | | 0.5 | first recorded |\n"
            "## older\n| `x.y` | 49.74 | 47.59 | pretraining |\n- `w` moved to 3.0\n")
    assert changelog_move("x.y", text) == ("47.59", "48.10", "- `x.y` 47.59 -> 48.10 (a fix)")
    assert golden_value_error("x.y", "48.1", text) is None and golden_value_error("z", 0.5, text) is None
    assert "a revert" in golden_value_error("x.y", "47.59", text)
    assert "x.y" in golden_value_error("x.y", "49.74", text) and "a revert" not in golden_value_error("x.y", 49.74, text)
    assert "states no move" in golden_value_error("w", "3.0", text)
    assert "no CHANGELOG.md line names it" in golden_value_error("v", "1", text)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_tolerance_is_stated_and_below_one_and_the_figure_is_measured(name):
    g = FIGURES[name]
    assert set(g) >= {"value", "tolerance", "spread", "test"}, f"{name}: needs value, tolerance, spread, test"
    assert 0 <= float(g["tolerance"]) < 1.0, f"{name}: tolerance {g['tolerance']} would let a move of 1.0 pass"
    test = REPO / g["test"].split("::")[0]
    assert test.is_file() and f'"{name}"' in test.read_text(), f"{name}: {g['test']} does not measure it"
    with pytest.raises(AssertionError, match=re.escape(name)):      # moved by 1.0: the run's check fails, naming it
        expect_figure(name, float(g["value"]) + 1.0)
    expect_figure(name, float(g["value"]))


def test_an_unknown_figure_fails_naming_it():
    with pytest.raises(AssertionError, match="'no_such.figure' is not in"):
        expect_figure("no_such.figure", 1.0)
