"""A pipeline run that did no work ends in a Completed state named for it, with the tag of the same
word (what the UI filters by); a run that computed something ends plain Completed."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("status, stages, name", [
    ("unchanged", [], "Unchanged"),
    ("completed", ["cached", "cached"], "Reused"),
    ("completed", ["cached", "completed"], "Completed"),
])
def test_the_final_state_says_what_the_run_did(prefect_test_harness, home, status, stages, name):
    from prefect import flow
    from prefect.client.orchestration import get_client

    from defsentflow.flows.pipeline import final_state
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.start_run("pipeline", run_id="r1")
    for i, s in enumerate(stages):
        cat.record_stage("r1", f"stage-{i}", s)

    @flow
    def pipeline_like() -> dict:
        return final_state({"run_id": "r1", "status": status})

    state = pipeline_like(return_state=True)
    assert state.is_completed() and state.name == name and state.result() == {"run_id": "r1", "status": status}
    with get_client(sync_client=True) as client:
        tags = client.read_flow_run(state.state_details.flow_run_id).tags
    assert (name.lower() in tags) is (name != "Completed"), tags
