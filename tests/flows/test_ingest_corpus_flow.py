from __future__ import annotations

import uuid

from defsentflow.corpus import load_chunks
from defsentflow.retrieval import load_index
from defsentflow.storage import Catalog


def _task_states(flow_run_id) -> set[str]:
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {r.state.name for r in runs}


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

    state = ingest_corpus_flow([str(src)], "flowtest", indexes=["bm25"], return_state=True)
    again = state.result()
    assert again["key"] == first["key"]
    assert _task_states(state.state_details.flow_run_id) == {"Cached"}
    assert Catalog().query("SELECT count(*) AS n FROM corpora")[0]["n"] == 1

    (src / "a.txt").write_text(f"Title {marker}\n\nChanged content now.\n")
    changed = ingest_corpus_flow([str(src)], "flowtest")
    assert changed["key"] != first["key"] and changed["sentences"] == 2 and changed["indexes"] == {}
