from __future__ import annotations

import pytest

from defsentflow.dictionary import DefinitionRecord, RejectedRecord, read_oewn
from defsentflow.dictionary.oewn import oewn_files


def test_reads_glosses_of_each_lemma_sense_with_pos_synset_examples(tiny_oewn):
    recs = list(read_oewn(tiny_oewn, workers=1))
    good = [r for r in recs if isinstance(r, DefinitionRecord)]
    got = {(r.entry, r.definition, r.pos, r.synset) for r in good}
    assert ("bank", "a building: where such an institution works", "n", "08437235-n") in got
    assert ("apple", "native Eurasian tree widely cultivated in many varieties for its firm rounded edible fruits",
            "n", "12651821-n") in got
    assert ("bank", "do business with a bank or keep an account at a bank", "v", "02293158-v") in got
    # Apple(1) + apple(2) + bank: 2 glosses + 1 + 1
    assert len(good) == 7
    bank = next(r for r in good if r.synset == "08437235-n")
    assert bank.examples == ("he cashed a check at the bank", "that bank holds the mortgage on my home")
    assert bank.file.endswith("entries-b.yaml") and bank.line == 1
    assert next(r for r in good if r.entry == "apple").line == 6


def test_dangling_synset_is_rejected_with_file_and_line(tiny_oewn):
    rejected = [r for r in read_oewn(tiny_oewn, workers=1) if isinstance(r, RejectedRecord)]
    assert len(rejected) == 1
    r = rejected[0]
    assert r.reason == "dangling_reference" and r.file.endswith("entries-a.yaml") and r.line == 13
    assert "99999999-n" in r.detail and "avocado" in r.raw


def test_process_pool_gives_the_same_records(tiny_oewn, monkeypatch):
    monkeypatch.setattr("defsentflow.dictionary.oewn.POOL_MIN_BYTES", 0)
    assert list(read_oewn(tiny_oewn, workers=2)) == list(read_oewn(tiny_oewn, workers=1))


def test_malformed_synset_names_its_file(tiny_oewn):
    (tiny_oewn / "verb.possession.yaml").write_text("02293158-v:\n  partOfSpeech: v\n")
    rejected = [r for r in read_oewn(tiny_oewn, workers=1) if isinstance(r, RejectedRecord) and r.reason == "malformed"]
    assert len(rejected) == 1 and "verb.possession.yaml:1" in rejected[0].detail


def test_not_an_oewn_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        oewn_files(tmp_path / "missing")
    with pytest.raises(ValueError, match="not an OEWN YAML directory"):
        oewn_files(tmp_path)
