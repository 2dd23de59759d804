"""The harvest-pairs flow: sequential library run == Prefect flow on a local Dask cluster."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.scoring.helpers import harvest_config, write_text_corpus


@pytest.mark.slow
def test_dask_run_equals_sequential_run(tmp_path, tiny_bert_dir, monkeypatch):
    from flows.harvest_pairs import run_harvest_flow
    from defsentflow.scoring.stages import run_harvest

    corpus = write_text_corpus(tmp_path / "corpus", n_docs=10, seed=4)
    seq_root, dask_root = tmp_path / "seq", tmp_path / "dask"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(seq_root))
    # the tiny random encoder gives nearly constant S(s, c); centring keeps the labels informative
    pairs = {"similarity": "centered_cosine"}
    sequential = run_harvest(harvest_config(corpus, tiny_bert_dir, seq_root, pairs=pairs))

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(dask_root))
    cfg = harvest_config(corpus, tiny_bert_dir, dask_root, pairs=pairs, compute={"local_workers": 2})
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
