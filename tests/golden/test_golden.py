"""The golden figures file itself (tests/golden/figures.yaml): cheap checks that run on every suite run.

A golden value changes only in a commit that says why: every value must appear on the newest
CHANGELOG.md line that names its figure, so editing a value (by 1.0 or by 0.01) fails here at once,
naming the figure, even where the run that measures it is skipped. The runs themselves compare with the file
through :func:`tests.golden.expect_figure`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.golden import CHANGELOG, FILE, expect_figure, golden_figures

REPO = Path(__file__).resolve().parents[2]
FIGURES = golden_figures()


def _literal(name: str) -> str:
    """The value as written in figures.yaml (so 44.50 stays "44.50")."""
    m = re.search(rf"^  {re.escape(name)}:\n(?:    .*\n)*?    value: ([^\s#]+)", FILE.read_text(), flags=re.M)
    assert m, f"{name}: no value line in {FILE.name}"
    return m.group(1)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_golden_value_is_stated_in_the_changelog(name):
    value = _literal(name)
    lines = [line for line in CHANGELOG.read_text().splitlines() if f"`{name}`" in line]
    assert lines, f"golden figure {name} ({value}): no CHANGELOG.md line names it"
    pattern = re.compile(rf"(?<![\d.]){re.escape(value)}(?![\d])")
    # the newest line naming it (CHANGELOG.md is newest first) states the value the file holds now
    assert pattern.search(lines[0]), (
        f"golden figure {name}: its value {value} in tests/golden/{FILE.name} is not on the newest CHANGELOG.md line "
        f"naming it ({lines[0]!r}); a golden value moves only with a CHANGELOG.md line saying which change moved it "
        "and by how much")


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
