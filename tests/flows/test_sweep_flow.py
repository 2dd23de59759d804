"""The ``sweep`` flow on the tiny pipeline: points share cached stages, finished points are skipped,
a killed point resumes from its cached stages, results land in the catalog view and the table."""

from __future__ import annotations

import json
import os
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


_VARYING = ("run_id", "seconds", "started_at", "ended_at", "config_path", "owner", "model_dir", "path")


def _figures(root) -> list[dict]:
    """The sweep's table without what differs from one run to the next (ids, times, paths), with the
    hash of each point's selected weights."""
    import hashlib
    from pathlib import Path

    from defsentflow.pipeline import selected_model_dir

    out = []
    for r in Catalog(root).query("SELECT * FROM sweep_results WHERE sweep = 'tiny-sweep' ORDER BY position"):
        config = Catalog(root).query("SELECT config_path FROM sweep_points WHERE sweep = 'tiny-sweep' AND position = ?",
                                     [r["position"]])[0]["config_path"]
        weights = b"".join(f.read_bytes() for f in sorted(Path(selected_model_dir(config)).glob("*.safetensors")))
        out.append({**{k: v for k, v in r.items() if not any(x in k for x in _VARYING)},
                    "weights": hashlib.blake2b(weights).hexdigest()})
    return out


def _on_two_local_workers(path, root, barrier, monkeypatch) -> dict:
    """Run the sweep file at ``path`` in data root ``root`` as ``defsentflow sweep run --local-workers 2`` does."""
    from distributed import Client

    from defsentflow.compute import ComputeSection
    from defsentflow.fanout import BARRIER_ENV
    from defsentflow.flows.sweep import sweep_flow
    from defsentflow.tasks.cluster import compute_cluster

    home = os.environ["DEFSENTFLOW_HOME"]
    root.mkdir()
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(root))
    try:
        with compute_cluster(ComputeSection(local_workers=2)) as address, Client(address) as client:
            client.run(lambda: os.environ.update({BARRIER_ENV: f"{barrier}:2"}))
            result = sweep_flow(str(path))
        assert len(result["ran"]) == 2 and not result["failed"], result
        return {"rows": _figures(root), "met": sorted(f.read_text() for f in barrier.glob("call-*"))}
    finally:
        monkeypatch.setenv("DEFSENTFLOW_HOME", home)


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
    # build task), untrained scores, entry matrix and baseline evaluation (its content key)
    assert states.get("build-dictionary") == ["Completed"]
    evaluations = [r["status"] for r in Catalog().query("SELECT status FROM stages WHERE stage = 'evaluate-model'")]
    assert "cached" in evaluations, evaluations
    # PST's pieces are reused by the library's content keys: one entry matrix and one untrained score
    # for both points, and one trained model per point
    kinds = {r["kind"]: r["n"] for r in Catalog().query(
        "SELECT kind, count(*) AS n FROM artifacts WHERE kind IN ('entry_matrix', 'model') GROUP BY kind")}
    assert kinds == {"entry_matrix": 1, "model": 2}, kinds
    # each model's figures are two records of the one figure store (PST's selection figure and the evaluate
    # stage's), and the untrained model's are the same two for both points: computed once, not per point
    stored = {r["name"]: r["n"] for r in Catalog().query(
        "SELECT name, count(*) AS n FROM artifacts WHERE kind = 'evaluation' GROUP BY name")}
    assert stored.pop("base:tiny-bert0") == 2 and len(stored) == 2 and set(stored.values()) == {2}, stored

    rows = Catalog().query("SELECT * FROM sweep_results WHERE sweep = 'tiny-sweep' ORDER BY position")
    assert [r["status"] for r in rows] == ["completed", "completed"]
    assert all(r["trained_step"] == 1 and r["revdict_head_mrr"] is not None and r["revdict_cosine_mrr"] is not None
               for r in rows), rows
    assert json.loads(rows[1]["params"]) == {"pst.lr": 3e-4}

    # The same sweep with --local-workers 2: both points at once (their candidates met at a barrier
    # on the two workers), and the figures and the selected weights of the sequential sweep.
    side_by_side = _on_two_local_workers(path, tmp_path / "par", tmp_path / "barrier", monkeypatch)
    assert side_by_side["met"] == ["met", "met"], side_by_side["met"]
    assert side_by_side["rows"] == _figures(home)
    assert len({r["weights"] for r in side_by_side["rows"]}) == 2  # two learning rates: two models, compared bit for bit

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
