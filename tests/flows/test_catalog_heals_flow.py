"""Issue 22, facts 8 and 9 at the flow level: a lost catalog makes no stage lie (reuse is decided
by the library's content keys, registered again from the records), and a copied data root keeps
its cache hits while reading only its own files."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

from test_ingest_dictionary import _task_states

from defsentflow.dictionary import load_dictionary
from defsentflow.storage import Catalog


def _sources(tmp_path):
    marker = uuid.uuid4().hex  # unique content: no cache entry from another test can match
    tsv = tmp_path / "a.tsv"
    tsv.write_text(f"dog\ta domesticated canid {marker}\ncat\tsmall feline {marker}\n")
    return [{"kind": "tsv", "paths": [str(tsv)]}]


def test_a_deleted_catalog_does_not_make_a_cached_stage_lie(prefect_test_harness, home, tmp_path):
    from defsentflow.flows.ingest_dictionary import ingest_dictionary_flow

    config = {"name": "healdict", "sources": _sources(tmp_path)}
    first = ingest_dictionary_flow(config)
    (home / "catalog.duckdb").unlink()  # fact 8: artifacts and Prefect's results stay
    Catalog._ddl_applied.clear()
    state = ingest_dictionary_flow(config, return_state=True)
    # once (a Prefect cache beside the library's): both tasks "Cached", nothing registered, and the next
    # stage's lookup a KeyError; now the library finds the artifact and registers it
    assert set(_task_states(state.state_details.flow_run_id).values()) == {"Completed"}
    again = state.result()
    assert again.key == first.key and Path(again.path) == Path(first.path)
    assert load_dictionary("healdict").num_rows == 2
    state = ingest_dictionary_flow(config, return_state=True)  # registered again: nothing to do
    assert state.result().status == "unchanged" and not _task_states(state.state_details.flow_run_id)
    assert load_dictionary("healdict").num_rows == 2


def test_a_copied_root_keeps_its_cache_hits_and_reads_its_own_files(prefect_test_harness, home, tmp_path,
                                                                    monkeypatch):
    from defsentflow.flows.ingest_dictionary import ingest_dictionary_flow

    config = {"name": "copydict", "sources": _sources(tmp_path)}
    first = ingest_dictionary_flow(config)
    assert Path(first.path).is_relative_to(home)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    gone = tmp_path / "moved-away"
    home.rename(gone)  # the original's paths are gone (chmod 000 alone does not stop root)
    gone.chmod(0)
    try:
        monkeypatch.setenv("DEFSENTFLOW_HOME", str(copy))
        Catalog._ddl_applied.clear()
        state = ingest_dictionary_flow(config, return_state=True)
        result = state.result()
        # the copy's catalog knows the dataset: nothing rebuilt, and every path is the copy's
        assert result.status == "unchanged" and not _task_states(state.state_details.flow_run_id)
        assert Path(result.path) == copy / Path(first.path).relative_to(home)
        assert load_dictionary("copydict").num_rows == 2
    finally:
        gone.chmod(0o755)
        shutil.rmtree(gone, ignore_errors=True)
