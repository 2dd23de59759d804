"""Small dictionary sources written by the tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

ENTRIES_A = textwrap.dedent("""\
    Apple:
      n:
        sense:
        - id: 'apple%1:13:00::'
          synset: 07755101-n
    apple:
      n:
        sense:
        - id: 'apple%1:13:00::'
          synset: 07755101-n
        - id: 'apple%1:20:00::'
          synset: 12651821-n
    avocado:
      n:
        sense:
        - id: 'avocado%1:13:00::'
          synset: 99999999-n
    """)

ENTRIES_B = textwrap.dedent("""\
    bank:
      n:
        pronunciation:
        - value: bæŋk
        sense:
        - id: 'bank%1:14:00::'
          synset: 08437235-n
        - id: 'bank%1:17:01::'
          synset: 09236472-n
      v:
        sense:
        - id: 'bank%2:40:00::'
          subcat:
          - via
          synset: 02293158-v
    """)

NOUNS = textwrap.dedent("""\
    07755101-n:
      definition:
      - fruit with red or yellow or green skin and sweet to tart crisp whitish flesh
      example:
      - an apple a day
      members:
      - apple
      partOfSpeech: n
    12651821-n:
      definition:
      - native Eurasian tree widely cultivated in many varieties for its firm rounded
        edible fruits
      members:
      - apple
      - orchard apple tree
      partOfSpeech: n
    08437235-n:
      definition:
      - a financial institution that accepts deposits
      - 'a building: where such an institution works'
      example:
      - source: A. Writer
        text: he cashed a check at the bank
      - that bank holds the mortgage on my home
      members:
      - bank
      partOfSpeech: n
    09236472-n:
      definition:
      - sloping land (especially the slope beside a body of water)
      members:
      - bank
      partOfSpeech: n
    """)

VERBS = textwrap.dedent("""\
    02293158-v:
      definition:
      - do business with a bank or keep an account at a bank
      example:
      - Where do you bank in this town?
      members:
      - bank
      partOfSpeech: v
    """)


@pytest.fixture()
def tiny_oewn(tmp_path) -> Path:
    """A four-file OEWN directory: 4 lemmas (one only differing in case), 6 senses, one sense
    pointing at a synset defined nowhere (avocado), a synset with two definitions."""
    root = tmp_path / "oewn"
    root.mkdir()
    (root / "entries-a.yaml").write_text(ENTRIES_A)
    (root / "entries-b.yaml").write_text(ENTRIES_B)
    (root / "noun.food.yaml").write_text(NOUNS)
    (root / "verb.possession.yaml").write_text(VERBS)
    (root / "frames.yaml").write_text("via: Somebody ----s\n")
    return root


@pytest.fixture()
def write(tmp_path):
    """``write(name, text_or_bytes)`` -> path of a new file under the test's tmp dir."""

    def _write(name: str, content: str | bytes) -> Path:
        p = tmp_path / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        return p

    return _write
