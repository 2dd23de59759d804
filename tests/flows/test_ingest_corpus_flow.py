from __future__ import annotations

import uuid

from defsentflow.corpus import load_chunks
from defsentflow.retrieval import load_index
from defsentflow.storage import Catalog


def test_ingest_corpus_flow_caches_by_content(prefect_test_harness, home, tmp_path):
    from defsentflow.flows.ingest_corpus import ingest_corpus_flow

    src = tmp_path / "src"
    src.mkdir()
    marker = uuid.uuid4().hex  # unique content: no cache entry from another test can match
    (src / "a.txt").write_text(f"Title {marker}\n\nThe first paragraph is here. It has two sentences.\n\nA second one.\n")
    first = ingest_corpus_flow([str(src)], "flowtest", indexes=["bm25"])
    assert first["documents"] == 1 and first["sentences"] == 4 and not first["cached"]
    assert load_chunks("flowtest").num_rows == first["chunks"] == 3
    ids, _ = load_index(first["indexes"]["bm25"]["key"]).search(["second"], top_n=1)
    assert ids[0, 0] == 2

    again = ingest_corpus_flow([str(src)], "flowtest", indexes=["bm25"])
    assert again["key"] == first["key"]
    assert again["cached"]  # the library's content key: found, not ingested again
    assert Catalog().query("SELECT count(*) AS n FROM corpora")[0]["n"] == 1

    (src / "a.txt").write_text(f"Title {marker}\n\nChanged content now.\n")
    changed = ingest_corpus_flow([str(src)], "flowtest")
    assert changed["key"] != first["key"] and changed["sentences"] == 2 and changed["indexes"] == {}
