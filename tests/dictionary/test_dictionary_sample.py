from __future__ import annotations

import json
from collections import Counter

import pytest

from defsentflow.dictionary import DictionaryConfig, SourceSpec, ingest_dictionary, load_examples
from defsentflow.storage import sample_dir

SAMPLE = sample_dir() / "dictionary" / "oewn-sample.jsonl"


def test_embedded_sample_is_small_licensed_and_ingests_whole(home):
    assert SAMPLE.stat().st_size < 1_500_000
    assert "CC BY 4.0" in (SAMPLE.parent / "LICENSE.md").read_text()
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    entries = {r["entry"] for r in rows}
    assert 3500 <= len(entries) <= 4500
    senses = Counter(r["entry"] for r in rows)
    assert sum(1 for n in senses.values() if n > 1) > 300  # entries with several definitions
    res = ingest_dictionary(DictionaryConfig(name="sample", sources=(SourceSpec(kind="jsonl", paths=(str(SAMPLE),)),)))
    s = res.summary
    assert (s["read"], s["quarantined"], s["duplicates"]) == (len(rows), 0, 0)
    assert (s["entries"], s["definitions"]) == (len(entries), len(rows))
    assert s["examples"] == sum(len(r.get("examples", ())) for r in rows) == load_examples("sample").num_rows


@pytest.mark.slow
def test_sample_generator_reproduces_the_embedded_sample(shared_data, tmp_path):
    from defsentflow.sample.make_dictionary_sample import main

    out = tmp_path / "sample.jsonl"
    assert main(["--oewn", str(shared_data / "oewn" / "yaml"), "--out", str(out)]) == 0
    assert out.read_bytes() == SAMPLE.read_bytes()
