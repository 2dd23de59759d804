"""The harvest-pairs flow: sequential library run == Prefect flow on a local Dask cluster."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.scoring.helpers import harvest_config, write_text_corpus


@pytest.mark.slow
def test_dask_run_equals_sequential_run(tmp_path, tiny_bert_dir, monkeypatch):
    from defsentflow.flows.harvest_pairs import run_harvest_flow
    from defsentflow.scoring.stages import run_harvest

    corpus = write_text_corpus(tmp_path / "corpus", n_docs=10, seed=4)
    seq_root, dask_root = tmp_path / "seq", tmp_path / "dask"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(seq_root))
    # the tiny random encoder gives nearly constant S(s, c); centring keeps the labels informative
    pairs = {"similarity": "centered_cosine"}
    # one torch thread, as on the Dask workers: the same summation order, so the same fp32 labels
    sequential = run_harvest(harvest_config(corpus, tiny_bert_dir, seq_root, pairs=pairs, threads=1))

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(dask_root))
    cfg = harvest_config(corpus, tiny_bert_dir, dask_root, pairs=pairs, threads=1, compute={"local_workers": 2})
    flowed = run_harvest_flow(cfg.model_dump(mode="json"))

    assert flowed["key"] == sequential["key"]  # same inputs, same content key
    assert flowed["batches_computed"] == len(list((dask_root).rglob("pairs-*.parquet"))) > 1
    a, b = pq.read_table(sequential["path"]), pq.read_table(flowed["path"])
    assert a.drop_columns(["score"]).equals(b.drop_columns(["score"]))
    # Labels that could differ between the runs (so the comparison below means something): spread
    # out and mostly distinct. The tiny random encoder's labels are close to 1, hence the low bar.
    scores = a.column("score").to_numpy()
    assert scores.std() > 0.01 and len(np.unique(np.round(scores, 4))) > len(scores) // 2
    np.testing.assert_allclose(a.column("score").to_numpy(), b.column("score").to_numpy(), atol=1e-6)


def _harvest_rows(root, run_id: str) -> dict[str, list]:
    """What a harvest run leaves in the catalog, without times and paths."""
    from defsentflow.storage import Catalog

    cat = Catalog(root)
    return {
        "runs": [tuple(r.values()) for r in cat.query("SELECT flow, status, note FROM runs WHERE run_id = ?", [run_id])],
        "artifacts": [tuple(r.values()) for r in cat.query(
            "SELECT artifact_key, kind, name, run_id FROM artifacts ORDER BY artifact_key")],
        "harvest_stats": [tuple(r.values()) for r in cat.query(
            "SELECT artifact_key, run_id, corpus, n_pairs, n_neighbour, n_random, n_batches FROM harvest_stats")],
    }


def test_cli_and_flow_run_the_same_sequencer(tmp_path, tiny_bert_dir, monkeypatch):
    """``defsentflow harvest`` (local mode) and the ``harvest-pairs`` flow: one result shape and the
    same catalog rows on fresh data roots; a second flow run is a whole-harvest cache hit."""
    import yaml

    from defsentflow.cli import main
    from defsentflow.flows.harvest_pairs import run_harvest_flow

    corpus = write_text_corpus(tmp_path / "corpus", n_docs=6, seed=2)
    local_root, flow_root = tmp_path / "local", tmp_path / "flow"
    cfg = harvest_config(corpus, tiny_bert_dir, local_root, pairs={"n_pairs": 12})
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(local_root))
    assert main(["--quiet", "harvest", str(path), "--run-id", "same"]) == 0
    local = _harvest_rows(local_root, "same")

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(flow_root))
    flowed = run_harvest_flow(harvest_config(corpus, tiny_bert_dir, flow_root, pairs={"n_pairs": 12})
                              .model_dump(mode="json"), run_id="same")
    assert _harvest_rows(flow_root, "same") == local
    assert local["runs"] == [("harvest-pairs", "completed", f"{flowed['n_pairs']} pairs -> {flowed['key']}")]
    assert not flowed["cached"] and flowed["batches_computed"] >= 1
    again = run_harvest_flow(harvest_config(corpus, tiny_bert_dir, flow_root, pairs={"n_pairs": 12})
                             .model_dump(mode="json"))
    assert again["cached"] and again["batches_computed"] == 0 and again.keys() == flowed.keys()
