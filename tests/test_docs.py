"""The README and docs/results.md: short, their links resolve, and every command they show exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from defsentflow.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "results.md"]


def test_readme_is_short_and_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (measured results belong in docs/results.md)"
    first_block = lines[lines.index("```bash") + 1:lines.index("```bash") + 3]
    assert [line.split()[:2] for line in first_block] == [["make", "demo"], ["make", "test"]]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path):
    text = doc.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), flags=re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{doc.name}: broken links {broken}"


def _command_paths() -> set[tuple[str, ...]]:
    import argparse

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield (*prefix, name)
                    yield from walk(sub, (*prefix, name))

    return set(walk(build_parser(), ()))


def _shown_commands(text: str) -> list[str]:
    """``defsentflow ...`` lines of fenced code blocks and inline code spans: up to two words each."""
    fenced = re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.M | re.S)
    spans = [*(line for block in fenced for line in block.splitlines()), *re.findall(r"`([^`\n]+)`", text)]
    word = r"[a-z][a-z|-]*"
    return [m.group(1) for s in spans if (m := re.match(rf"\s*defsentflow ({word}(?: {word})?)", s))]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_documented_commands_exist(doc: Path):
    commands = _command_paths()
    shown = _shown_commands(doc.read_text(encoding="utf-8"))
    assert len(shown) > 5
    unknown = []
    for words in shown:
        first, *rest = words.split()
        if (first,) not in commands:
            unknown.append(words)
        elif rest and any(c[0] == first and len(c) == 2 for c in commands):  # a group: its sub-command too
            if not all((first, sub) in commands for sub in rest[0].split("|")):
                unknown.append(words)
    assert not unknown, f"{doc.name} shows commands the CLI does not have: {unknown}"


def test_the_results_page_is_short_and_the_changelog_exists():
    lines = (ROOT / "docs" / "results.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 600, f"docs/results.md has {len(lines)} lines: current figures only (CHANGELOG.md says what moved)"
    assert (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").startswith("# Changelog")


# The control's departures from the papers (issues 42, 57): both docs name each one, and there are as many
# as defsentflow/claims/papers.py:departures lists for configs/claims-raw-ci.yaml.
DEPARTURES = ("learning-rate schedule", "combination", "seed", "length", "selection figure", "model size", "pooler",
              "WordNet", "batching", "pooling", "entry subsets", "single-token entries", "DefSent's learning rate",
              "DefSent's length")


@pytest.mark.parametrize("doc", [ROOT / "README.md", ROOT / "docs" / "results.md"], ids=lambda p: p.name)
def test_claim_verdicts_name_their_scope(doc: Path):
    """A claims table's verdict is about the control it was measured on: never a bare "holds",
    "not supported" or "contradicted" cell."""
    bare = [line for line in doc.read_text(encoding="utf-8").splitlines()
            if re.search(r"\|\s*(holds|not supported|contradicted)\s*\|", line)]
    assert not bare, f"{doc.name}: verdicts without their scope: {bare}"
    assert "on this control" in doc.read_text(encoding="utf-8")


@pytest.mark.parametrize("doc", [ROOT / "README.md", ROOT / "docs" / "papers.md"], ids=lambda p: p.name)
def test_the_docs_list_the_claims_controls_departures(doc: Path):
    text = doc.read_text(encoding="utf-8")
    claims = text[text.index("defsentflow claims"):] if doc.name == "README.md" else \
        next(line for line in text.splitlines() if line.startswith("| Claims:"))
    missing = [d for d in DEPARTURES if d not in claims]
    assert not missing, f"{doc.name}: the claims control's departures from the paper not named: {missing}"
    from defsentflow.claims import load_claims
    from defsentflow.claims.papers import departures

    control = load_claims(ROOT / "configs" / "claims-raw-ci.yaml")
    assert len(departures(control.base, control.spec)) == len(DEPARTURES), "a departure without its name here"
