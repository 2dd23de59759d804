"""BBC News (2,225 articles) through the corpus ingest, checked where the suite already ingested it.

The raw encoder both positive controls share (``raw_ci_encoder``, tests/integration/conftest.py)
is pretrained on BBC: its ``pretrain`` ingests the folder with :func:`ingest_corpus` under the name
``bbc`` and the default settings. This test makes the same call in that data root, so it finds that
artifact (same sources, same settings: the same key) instead of segmenting the 12,772 paragraphs a
second time (pysbd, about 26 s of CPU), and checks what the ingest wrote: the counts, the tables
and the one quarantined line.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from defsentflow.corpus import ingest_corpus, load_sentences, read_documents
from defsentflow.storage import Catalog

pytestmark = pytest.mark.slow


def test_bbc(raw_ci_encoder, shared_data, monkeypatch):
    bbc = shared_data / "corpus" / "bbc"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(raw_ci_encoder.home))
    res = ingest_corpus([bbc], "bbc")
    assert res.cached, "the pretraining of raw_ci_encoder ingested BBC under another key"
    assert (res.documents, res.quarantined, res.repaired) == (2225, 0, 1)
    read = read_documents([bbc])
    sents = load_sentences("bbc")
    assert sents.num_rows == res.sentences and pq.read_metadata(res.path / "chunks.parquet").num_rows == res.chunks
    assert len(set(sents.column("doc_id").to_pylist())) == len(read.documents) == 2225
    (q,) = Catalog().query("SELECT file, line FROM quarantine WHERE dataset = 'bbc'")
    assert q["file"].endswith("sport/199.txt") and q["line"] == 5
