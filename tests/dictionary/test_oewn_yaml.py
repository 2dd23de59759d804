from __future__ import annotations

import textwrap

import pytest
import yaml

from defsentflow.dictionary.oewn import ENTRY_KEEP, SYNSET_KEEP, oewn_files
from defsentflow.dictionary.oewn_yaml import IrregularYamlError, load_yaml, parse_yaml_text, prune, top_level_lines

# Every construct the OEWN export uses, in one document.
DOC = textwrap.dedent("""\
    '''hood':
      n:
        sense:
        - id: '''hood%1:15:00::'
          synset: 08243851-n
    '0':
      n:
        pronunciation:
        - value: ˈzɪəɹəʊ
          variety: GB
        sense:
        - adjposition: ip
          id: '0%1:23:00::'
          synset: 13764213-n
          derivation:
          - 'zero%2:30:00::'
    01316636-n:
      definition:
      - (genetics) an organism that possesses a recessive gene whose effect is masked
        by a dominant allele; the associated trait is not apparent
      example:
      - 'this is a dead town: nothing ever happens here'
      - source: https://en.wikipedia.org
        text: 'The risk of illiquidity need not apply only to individual investments:
          whole portfolios are subject to market risk.'
      - \\"Let me in,\\" he said.
      - "a \\"quoted\\" example"
      members:
      - carrier
      - 'true'
      partOfSpeech: n
    """)


def _base(text: str):
    return yaml.load(text, Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))


def test_parser_matches_pyyaml_on_every_construct():
    assert parse_yaml_text(DOC) == _base(DOC)


def test_keep_prunes_like_prune_and_lines_are_top_level_lines():
    keep = {1: frozenset({"definition", "example"})}
    lines: dict[str, int] = {}
    assert parse_yaml_text(DOC, keep, lines) == prune(_base(DOC), keep)
    assert lines == top_level_lines(DOC) == {"'hood": 1, "0": 6, "01316636-n": 17}


@pytest.mark.parametrize("text, line", [
    ("a:\n\n  b: c\n", 2),  # blank line: would be a line break inside a scalar
    ("a:\n  # note\n  b: c\n", 2),
    ("a:\n\tb: c\n", 2),
    ("a:\n  b: [1, 2]\n", 2),
    ("a:\n  b: |\n    text\n", 2),
    ("a:\n  b: c: d\n", 2),
    ("a:\n  b: 'unterminated\n", 2),
    ("a:\n  b:\nc: d\n", 2),  # empty value (null)
])
def test_irregular_yaml_is_refused_with_its_line(text, line):
    with pytest.raises(IrregularYamlError) as info:
        parse_yaml_text(text)
    assert info.value.line == line


def test_load_yaml_falls_back_to_pyyaml(tmp_path):
    text = "x-n:\n  definition: [flow style, is not handled]\n  partOfSpeech: n\n"
    path = tmp_path / "noun.x.yaml"
    path.write_text(text)
    data, lines = load_yaml(path)
    assert data == _base(text) and lines == {"x-n": 1}


def test_load_yaml_names_the_file_on_invalid_yaml(tmp_path):
    path = tmp_path / "noun.bad.yaml"
    path.write_text("x-n:\n  definition: [unclosed\n")
    with pytest.raises(ValueError, match="noun.bad.yaml"):
        load_yaml(path)


@pytest.mark.slow
def test_fast_parser_equals_pyyaml_on_real_oewn_files(shared_data):
    """The fast parser against PyYAML's C loader on real files that hold every construct in use
    (quoted keys, digits, multi-line plain and quoted scalars, example mappings, escapes)."""
    entries, synsets = oewn_files(shared_data / "oewn" / "yaml")
    wanted = {"entries-0.yaml", "entries-a.yaml", "entries-q.yaml", "entries-x.yaml", "noun.attribute.yaml",
              "adj.all.yaml", "adv.all.yaml", "verb.communication.yaml", "noun.Tops.yaml"}
    files = [f for f in entries + synsets if f.name in wanted]
    assert len(files) == len(wanted)
    for f in files:
        keep = ENTRY_KEEP if f.name.startswith("entries-") else SYNSET_KEEP
        text = f.read_text(encoding="utf-8")
        reference = _base(text)
        fast, lines = load_yaml(f, keep, fast=True)
        assert parse_yaml_text(text, keep) == fast, f"{f.name}: fell back to PyYAML"
        assert fast == prune(reference, keep), f.name
        assert list(lines) == list(reference), f.name
        assert lines == top_level_lines(text), f.name
    # And unpruned, where nothing is skipped, on a small file with relations.
    small = next(f for f in files if f.name == "noun.Tops.yaml")
    assert parse_yaml_text(small.read_text(encoding="utf-8")) == _base(small.read_text(encoding="utf-8"))
