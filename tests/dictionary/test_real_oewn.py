from __future__ import annotations

import pytest

from defsentflow.dictionary import DictionaryConfig, ingest_dictionary, load_dictionary, load_examples
from defsentflow.storage import Catalog


@pytest.mark.slow
def test_full_open_english_wordnet(shared_data, home):
    """Counts against the shared data README: 127,346 lower-cased lemmas, 185,104 (lemma, synset)
    pairs (each synset has one gloss or more), 50,024 usage examples."""
    res = ingest_dictionary(DictionaryConfig(name="oewn", sources=[{"kind": "oewn", "paths": [str(shared_data / "oewn" / "yaml")]}]))
    s = res.summary
    assert s["entries"] == 127_346
    assert 185_104 <= s["definitions"] <= 185_104 + 100
    assert s["quarantined"] == 0 and s["read"] == s["accepted"] + s["duplicates"]
    defs = load_dictionary("oewn")
    assert defs.num_rows == s["definitions"]
    pairs = set(zip(defs.column("entry").to_pylist(), defs.column("synset").to_pylist()))
    assert len(pairs) >= 185_000
    n = defs.num_rows
    for split, share in (("train", 0.8), ("dev", 0.1), ("test", 0.1)):
        got = load_dictionary("oewn", split=split).num_rows / n
        assert abs(got - share) < 0.01, (split, got)
    # Every synset example reaches the examples table (shared by the synset's lemmas).
    ex = load_examples("oewn")
    synset_of = dict(zip(defs.column("def_id").to_pylist(), defs.column("synset").to_pylist()))
    distinct = {(synset_of[d], e) for d, e in zip(ex.column("def_id").to_pylist(), ex.column("example").to_pylist())}
    assert 49_500 <= len(distinct) <= 50_024
    counts = Catalog().query("SELECT split, count(*) AS n FROM definitions WHERE dataset = 'oewn' GROUP BY 1")
    assert sum(r["n"] for r in counts) == n
