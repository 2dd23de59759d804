from __future__ import annotations

import json
import uuid

import pytest

from defsentflow.dictionary import load_dictionary
from defsentflow.storage import Catalog


def _task_states(flow_run_id) -> dict[str, str]:
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {r.name.rsplit("-", 1)[0]: r.state.name for r in runs}


def test_ingest_dictionary_flow_is_a_cache_hit_on_unchanged_sources(prefect_test_harness, home, tmp_path):
    from flows.ingest_dictionary import ingest_dictionary

    marker = uuid.uuid4().hex  # unique content: no cache entry from another test can match
    tsv = tmp_path / "a.tsv"
    tsv.write_text(f"dog\ta domesticated canid {marker}\nbad line\ncat\tsmall feline\n")
    jsonl = tmp_path / "b.jsonl"
    jsonl.write_text(json.dumps({"entry": "Dog", "definition": f"a domesticated canid {marker}"}) + "\n")
    sources = [{"kind": "tsv", "paths": [str(tsv)]}, {"kind": "jsonl", "paths": [str(jsonl)]}]

    state = ingest_dictionary("flowdict", sources, return_state=True)
    first = state.result()
    assert (first["read"], first["accepted"], first["duplicates"], first["quarantined"]) == (4, 2, 1, 1)
    assert first["registered"] and load_dictionary("flowdict").num_rows == 2
    assert set(_task_states(state.state_details.flow_run_id).values()) == {"Completed"}

    state = ingest_dictionary("flowdict", sources, return_state=True)
    assert state.result() == first
    assert _task_states(state.state_details.flow_run_id) == {"build-dictionary": "Cached", "register-dictionary": "Cached"}
    assert Catalog().query("SELECT count(*) AS n FROM ingest_summaries WHERE dataset = 'flowdict'")[0]["n"] == 1

    tsv.write_text(f"dog\ta domesticated canid {marker}\nemu\ta large bird\n")
    changed = ingest_dictionary("flowdict", sources)
    assert changed["key"] != first["key"] and changed["accepted"] == 2 and changed["duplicates"] == 1
    assert sorted(load_dictionary("flowdict").column("entry").to_pylist()) == ["dog", "emu"]


def test_missing_source_fails_the_flow_before_any_task(prefect_test_harness, home, tmp_path):
    from flows.ingest_dictionary import ingest_dictionary

    with pytest.raises(FileNotFoundError):
        ingest_dictionary("gone", [{"kind": "tsv", "paths": [str(tmp_path / "missing.tsv")]}])
    assert not (home / "parquet").exists()
