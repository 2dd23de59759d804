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
    from defsentflow.flows.ingest_dictionary import ingest_dictionary_flow

    marker = uuid.uuid4().hex  # unique content: no cache entry from another test can match
    tsv = tmp_path / "a.tsv"
    tsv.write_text(f"dog\ta domesticated canid {marker}\nbad line\ncat\tsmall feline\n")
    jsonl = tmp_path / "b.jsonl"
    jsonl.write_text(json.dumps({"entry": "Dog", "definition": f"a domesticated canid {marker}"}) + "\n")
    config = {"name": "flowdict", "sources": [{"kind": "tsv", "paths": [str(tsv)]}, {"kind": "jsonl", "paths": [str(jsonl)]}]}

    state = ingest_dictionary_flow(config, return_state=True)
    first = state.result()
    s = first.summary
    assert (s["read"], s["accepted"], s["duplicates"], s["quarantined"]) == (4, 2, 1, 1)
    assert first.status == "built" and load_dictionary("flowdict").num_rows == 2
    assert _task_states(state.state_details.flow_run_id) == {"build-dictionary": "Completed",
                                                             "register-dictionary": "Completed"}

    state = ingest_dictionary_flow(config, run_id="again", return_state=True)
    again = state.result()
    assert again.status == "unchanged" and again.key == first.key  # the library's check: no task runs
    assert _task_states(state.state_details.flow_run_id) == {}
    assert Catalog().query("SELECT flow, status FROM runs WHERE run_id = 'again'") == [
        {"flow": "ingest-dictionary", "status": "completed"}]
    assert Catalog().query("SELECT count(*) AS n FROM ingest_summaries WHERE dataset = 'flowdict'")[0]["n"] == 1


    tsv.write_text(f"dog\ta domesticated canid {marker}\nemu\ta large bird\n")
    changed = ingest_dictionary_flow(config)
    assert changed.key != first.key and changed.summary["accepted"] == 2 and changed.summary["duplicates"] == 1
    assert sorted(load_dictionary("flowdict").column("entry").to_pylist()) == ["dog", "emu"]


def test_missing_source_fails_the_flow_before_any_task(prefect_test_harness, home, tmp_path):
    from defsentflow.flows.ingest_dictionary import ingest_dictionary_flow

    with pytest.raises(FileNotFoundError):
        ingest_dictionary_flow({"name": "gone", "sources": [{"kind": "tsv", "paths": [str(tmp_path / "missing.tsv")]}]})
    assert not (home / "parquet").exists()


def _dictionary_rows(root) -> dict[str, list]:
    cat = Catalog(root)
    return {
        "artifacts": [tuple(r.values()) for r in cat.query("SELECT artifact_key, kind, name FROM artifacts ORDER BY 1")],
        "dictionaries": [tuple(r.values()) for r in cat.query("SELECT name, artifact_key FROM dictionaries")],
        "summaries": [tuple(r.values()) for r in cat.query(
            "SELECT dataset, artifact_key, status FROM ingest_summaries ORDER BY 1")],
    }


def test_cli_and_flow_run_the_same_sequencer(prefect_test_harness, home, tmp_path, monkeypatch):
    """``defsentflow ingest dictionary`` and the ``ingest-dictionary`` flow: the same catalog rows on
    fresh data roots."""
    from defsentflow.cli import main
    from defsentflow.flows.ingest_dictionary import ingest_dictionary_flow

    tsv = tmp_path / "a.tsv"
    tsv.write_text(f"dog\ta domesticated canid {uuid.uuid4().hex}\ncat\tsmall feline\nbad line\n")
    assert main(["--quiet", "ingest", "dictionary", "--source", "tsv", str(tsv), "--name", "same"]) == 0
    local = _dictionary_rows(home)
    other = tmp_path / "other-home"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(other))
    result = ingest_dictionary_flow({"name": "same", "sources": [{"kind": "tsv", "paths": [str(tsv)]}]})
    assert _dictionary_rows(other) == local and local["dictionaries"] == [("same", result.key)]
