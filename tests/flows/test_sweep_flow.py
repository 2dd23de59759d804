"""The ``sweep`` flow on the tiny pipeline: points share cached stages, finished points are skipped,
a killed point resumes from its cached stages, results land in the catalog view and the table."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import yaml

from defsentflow.storage import Catalog
from tests.integration.tiny_pipeline_utils import tiny_config


def _states(flow_run_id) -> dict[str, list[str]]:
    """Task name -> the states of its runs over a flow run and all its subflow runs (recursively)."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId

    with get_client(sync_client=True) as client:
        ids, frontier = [flow_run_id], [flow_run_id]
        while frontier:
            subs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)))
            frontier = [r.id for r in subs]
            ids += frontier
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))
    out: dict[str, list[str]] = {}
    for r in runs:
        out.setdefault(r.name.rsplit("-", 1)[0], []).append(r.state.name)
    return out


def test_sweep_flow_shares_stages_skips_finished_points_and_resumes(prefect_test_harness, tiny_bert_dir, home,
                                                                   tmp_path, monkeypatch):
    import defsentflow.training.loop as loop
    from defsentflow.flows.sweep import sweep_flow

    base = tiny_config(tmp_path, tiny_bert_dir, name="tinybase")
    spec = {"name": "tiny-sweep", "base": str(base),
            "set": {"pst.steps": 1, "pst.lr_per_step": None, "eval.best_trained": True, "report": False},
            "axes": {"pst.lr": [1e-3, 3e-4]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))

    state = sweep_flow(str(path), return_state=True)
    first = state.result()
    assert len(first["ran"]) == 2 and not first["failed"]
    states = _states(state.state_details.flow_run_id)
    # the second point reused the first one's dictionary (the library finds it registered: no second
    # build task), untrained scores, entry matrix and baseline evaluation (the library's evaluation
    # key: the evaluation is filed again, its task never runs)
    assert states.get("build-dictionary") == ["Completed"]
    evaluated = Catalog().query("SELECT status, count(*) AS n FROM stages WHERE stage = 'evaluate-model' GROUP BY ALL")
    assert {r["status"]: r["n"] for r in evaluated}.get("cached", 0) >= 1, evaluated
    assert len(states.get("evaluate-model", [])) == sum(r["n"] for r in evaluated if r["status"] == "completed")
    # PST's pieces are reused by the library's content keys: one entry matrix and one untrained score
    # for both points, and one trained model per point
    kinds = {r["kind"]: r["n"] for r in Catalog().query(
        "SELECT kind, count(*) AS n FROM artifacts WHERE kind IN ('entry_matrix', 'model') GROUP BY kind")}
    assert kinds == {"entry_matrix": 1, "model": 2}, kinds
    base_scores = Catalog().query("SELECT count(*) AS n FROM artifacts WHERE kind = 'selection_score' "
                                  "AND name LIKE 'base-%'")
    assert base_scores[0]["n"] == 1

    rows = Catalog().query("SELECT * FROM sweep_results WHERE sweep = 'tiny-sweep' ORDER BY position")
    assert [r["status"] for r in rows] == ["completed", "completed"]
    assert all(r["trained_step"] == 1 and r["revdict_head_mrr"] is not None and r["revdict_cosine_mrr"] is not None
               for r in rows), rows
    assert json.loads(rows[1]["params"]) == {"pst.lr": 3e-4}

    def forbidden(*a, **kw):
        raise AssertionError("a finished or cached point must not train")

    monkeypatch.setattr(loop, "train_encoder", forbidden)
    again = sweep_flow(str(path))
    assert again["skipped"] == first["ran"] and not again["ran"]

    # The second point was killed: its row still says 'running' and its process is gone.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    Catalog().execute("UPDATE sweep_points SET status = 'running', owner = ? WHERE sweep = 'tiny-sweep' AND position = 2",
                      [json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()})])
    resumed = sweep_flow(str(path))
    assert resumed["ran"] == [first["ran"][1]] and resumed["skipped"] == [first["ran"][0]]
    # Each point is an ordinary pipeline config: best-model names an encoder that loads with
    # transformers and sentence-transformers.
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    from defsentflow.pipeline import selected_model_dir

    best = selected_model_dir(Catalog().query("SELECT config_path FROM sweep_points WHERE position = 1")[0]["config_path"])
    assert AutoModel.from_pretrained(best).config.hidden_size == 32
    assert SentenceTransformer(best, device="cpu").encode(["a small cat"]).shape == (1, 32)
    report = resumed["report"]["markdown_path"]
    assert "| 2 | " in open(report).read() and resumed["report"]["chart_path"].endswith("sweep.png")
