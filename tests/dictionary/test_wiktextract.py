from __future__ import annotations

import json

import pytest

from defsentflow.dictionary import (
    DictionaryConfig,
    RejectedRecord,
    ingest_dictionary,
    load_dictionary,
    read_wiktextract,
)
from defsentflow.dictionary.store import load_examples
from defsentflow.storage import Catalog

DOG = {"word": "dog", "pos": "noun", "lang_code": "en", "senses": [
    {"glosses": ["A mammal, Canis familiaris."], "tags": ["countable"], "examples": [{"text": "The dog barked."}]},
    {"glosses": ["A man.", "A contemptible man."], "tags": ["slang"]},
    {"glosses": ["A man."]},
]}
DOGS = {"word": "dogs", "pos": "noun", "lang_code": "en", "senses": [
    {"glosses": ["plural of dog"], "tags": ["form-of", "plural"], "form_of": [{"word": "dog"}]}]}
COLOR = {"word": "colour", "pos": "noun", "lang_code": "en", "senses": [
    {"glosses": ["Alternative spelling of color"], "alt_of": [{"word": "color"}]},
    {"tags": ["no-gloss"]},
    {"glosses": ["The spectral composition of visible light."], "examples": [{"text": "a bright colour"}]}]}
HUND = {"word": "Hund", "pos": "noun", "lang_code": "de", "senses": [{"glosses": ["dog"]}]}
RUN = {"word": "run", "pos": "verb", "lang_code": "en", "senses": [
    {"glosses": "to move quickly"},
    {"glosses": ["To move swiftly on foot."], "examples": ["not an object"]},
    {"glosses": ["To manage."]}]}


def _fixture(write):
    lines = [json.dumps(DOG), json.dumps(DOGS), "{not json", json.dumps(COLOR), json.dumps(HUND),
             json.dumps({"pos": "noun", "lang_code": "en", "senses": []}), json.dumps(RUN), "", json.dumps(["x"])]
    return write("kaikki.jsonl", "\n".join(lines) + "\n")


def test_reader_streams_senses_filters_language_and_skips_form_of(write):
    stats: dict[str, int] = {}
    recs = list(read_wiktextract(_fixture(write), stats=stats))
    good = [r for r in recs if not isinstance(r, RejectedRecord)]
    assert [(r.entry, r.definition, r.line) for r in good] == [
        ("dog", "A mammal, Canis familiaris.", 1), ("dog", "A contemptible man.", 1), ("dog", "A man.", 1),
        ("colour", "The spectral composition of visible light.", 4), ("run", "To manage.", 7)]
    assert good[0].examples == ("The dog barked.",) and good[0].pos == "noun"
    assert good[1].meta == {"parent_glosses": ["A man."], "tags": ["slang"]}
    assert stats == {"form_of": 1, "alt_of": 1, "no_gloss": 1, "other_language": 1}
    bad = [(r.line, r.reason, r.detail) for r in recs if isinstance(r, RejectedRecord)]
    assert [(line, reason) for line, reason, _ in bad] == [
        (3, "malformed"), (6, "malformed"), (7, "malformed"), (7, "malformed"), (8, "empty"), (9, "malformed")]
    assert "invalid JSON" in bad[0][2] and "missing key 'word'" in bad[1][2]
    assert bad[2][2].startswith("sense 0: 'glosses'") and bad[3][2].startswith("sense 1: 'examples'")


def test_lang_code_picks_another_language(write):
    recs = list(read_wiktextract(_fixture(write), lang_code="de"))
    assert [(r.entry, r.definition) for r in recs if not isinstance(r, RejectedRecord)] == [("Hund", "dog")]


def test_ingest_counts_and_quarantine(write, home):
    cfg = DictionaryConfig(name="wikt", sources=[{"kind": "wiktextract", "paths": [str(_fixture(write))]}])
    result = ingest_dictionary(cfg, root=home)
    s = result.summary
    assert (s["read"], s["accepted"], s["duplicates"], s["quarantined"]) == (11, 5, 0, 6)
    assert s["entries"] == 3 and s["definitions"] == 5 and s["examples"] == 2
    assert sorted(load_dictionary("wikt", root=home).column("entry").to_pylist()) == ["colour", "dog", "dog", "dog", "run"]
    assert load_examples("wikt", root=home).num_rows == 2
    assert sorted(r["line"] for r in Catalog(home).query("SELECT line FROM quarantine WHERE dataset = 'wikt'")) == [3, 6, 7, 7, 8, 9]


def test_lang_code_is_a_wiktextract_option_and_part_of_the_key():
    with pytest.raises(ValueError, match="lang_code is a wiktextract option"):
        DictionaryConfig(name="x", sources=[{"kind": "tsv", "paths": ["a.tsv"], "lang_code": "de"}])
    en = DictionaryConfig(name="x", sources=[{"kind": "wiktextract", "paths": ["a.jsonl"]}])
    de = DictionaryConfig(name="x", sources=[{"kind": "wiktextract", "paths": ["a.jsonl"], "lang_code": "de"}])
    assert en.key_fields() != de.key_fields()
