"""A pipeline run ends in a Completed state named for its most telling outcome (it did no work, or the
promotion gate's decision) with every outcome as a tag (what the UI filters by) and the decision as an
artifact; a run that computed something and has no decision ends plain Completed."""

from __future__ import annotations

import pytest

DECIDED = {"decision": "kept", "alias": "tiny@champion", "model_id": "dsp-new", "champion": "dsp-old",
           "figure": "stsb_dev_spearman", "value": 0.5, "champion_value": 0.6, "min_delta": 0.0,
           "reason": "dsp-old stays tiny@champion: dsp-new's stsb_dev_spearman 0.5 is below its 0.6", "why": "worse"}


@pytest.mark.parametrize("status, stages, decision, name, tags", [
    ("unchanged", [], None, "Unchanged", ["unchanged"]),
    ("completed", ["cached", "completed"], None, "Completed", []),
    ("completed", ["cached", "completed"], "promoted", "Promoted", ["promoted"]),
    ("completed", ["cached", "completed"], "not-comparable", "Not comparable", ["not-comparable"]),
    # every stage reused and the champion kept: Kept when the model lost (worse, tied, rolled back) ...
    ("completed", ["cached", "cached"], "kept", "Kept", ["kept", "reused"]),
    # ... Reused when the run's model is the champion itself (nothing changed)
    ("completed", ["cached", "cached"], "kept:re-run of the champion", "Reused", ["kept", "reused"]),
])
def test_the_final_state_says_what_the_run_did(prefect_test_harness, home, status, stages, decision, name, tags):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from defsentflow.flows.pipeline import final_state
    from defsentflow.run_summary import OUTCOMES
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.start_run("pipeline", run_id="r1")
    for i, s in enumerate(stages):
        cat.record_stage("r1", f"stage-{i}", s)
    decision, _, why = (decision or "").partition(":")
    result = {"run_id": "r1", "status": status,
              **({"promotion": {**DECIDED, "decision": decision, "why": why or DECIDED["why"]}} if decision else {})}

    @flow
    def pipeline_like() -> dict:
        return final_state(result)

    state = pipeline_like(return_state=True)
    assert state.is_completed() and state.name == name and state.result() == result
    with get_client(sync_client=True) as client:
        run_tags = client.read_flow_run(state.state_details.flow_run_id).tags
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["promotion-tiny-champion"])))
    assert sorted(t for t in run_tags if t in ("unchanged", "reused", "promoted", "kept", "not-comparable")) == tags
    if decision:  # the decision with both figures, where the UI shows a run's artifacts
        mine = [a for a in arts if a.flow_run_id == state.state_details.flow_run_id]
        assert mine and "| `dsp-new` | 0.5 |" in mine[0].data and "| `dsp-old` | 0.6 |" in mine[0].data
        assert state.message == (DECIDED["reason"] if name != "Reused" else OUTCOMES["reused"])
