"""The CLI end to end on a tiny model: ingest a dictionary, ``train pst``, ``revdict``, ``encode``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from defsentflow.cli import main
from defsentflow.storage import Catalog
from tests.training.test_pst_schedule import pipeline_config


@pytest.fixture()
def toy_dataset(home, tmp_path):
    """Dataset 'toy' ingested through the dictionary package (splits 60/20/20 so dev has queries)."""
    from defsentflow.dictionary import DictionaryConfig, ingest_dictionary
    from tests.training.test_pst_schedule import toy_dictionary

    t = toy_dictionary()
    src = tmp_path / "toy.jsonl"
    src.write_text("".join(json.dumps({"entry": e, "definition": d}) + "\n"
                           for e, d in zip(t.column("entry").to_pylist(), t.column("definition").to_pylist())))
    ingest_dictionary(DictionaryConfig(name="toy", sources=[{"kind": "jsonl", "paths": [str(src)]}], ratios=(0.6, 0.2, 0.2)))
    return "toy"


def _config(tmp_path, tiny_bert_dir, **extra) -> str:
    body = {"base_model": str(tiny_bert_dir), "dictionary": "toy", "steps": 2, "seeds": [0],
            "grid": [{"pooling": "cls", "entry_encoding": "ac"}], "lr": 5e-4, "batch_size": 8, "max_length": 32,
            "selection": "stsb-dev", "data_dir": str(tmp_path / "no-sts-here"), "device": "cpu", **extra}
    p = tmp_path / "pst.yaml"
    p.write_text(json.dumps(pipeline_config(body, name=body["dictionary"])))  # JSON is YAML
    return str(p)


def test_train_pst_then_revdict_and_encode(toy_dataset, tiny_bert_dir, tmp_path, capsys):
    assert main(["train", "pst", _config(tmp_path, tiny_bert_dir), "--run-id", "cli1"]) == 0
    out = capsys.readouterr().out
    assert "step 0" in out and "step 2" in out and "winner: step" in out
    assert "selecting by reverse-dictionary dev MRR" in out  # no STS data: the fallback is said
    run = Catalog().query("SELECT * FROM pst_runs WHERE run_id = 'cli1'")[0]
    assert run["selection_metric"] == "revdict-mrr" and "instead of STS-B dev" in run["note"]
    # the run's name for its choice is an alias of the chosen model's own id
    assert Catalog().query("SELECT m.path FROM model_names AS n JOIN models AS m USING (model_id) "
                           "WHERE n.name = 'pst-cli1' AND n.model_id = ?", [run["winner_model_id"]])
    model = Catalog().query("SELECT m.path FROM pst_steps p JOIN models m USING (model_id) "
                            "WHERE p.run_id = 'cli1' AND p.step = 2 AND p.chosen")[0]["path"]

    # Reverse dictionary from the CLI: the faiss index over the dictionary's entries (the model
    # knows its dictionary and its entry head, so the defaults are 'toy' and head mode).
    assert main(["revdict", model, "a small animal that lives in a house", "-k", "3"]) == 0
    assert "head mode" in capsys.readouterr().out
    assert main(["revdict", model, "a small animal that lives in a house", "-k", "3", "--json", "--mode", "cosine"]) == 0
    hits = json.loads(capsys.readouterr().out)[0]["entries"]
    assert len(hits) == 3 and hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]

    # An entry added later, without retraining, is found at once and by later look-ups.
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"entry": "zebra", "definition": "a striped wild animal like a horse"}) + "\n")
    assert main(["revdict-add", model, str(extra), "--mode", "cosine"]) == 0
    assert "added 1 definitions" in capsys.readouterr().out
    assert main(["revdict", model, "a striped wild animal like a horse", "--mode", "cosine", "-k", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["entries"][0]["entry"] == "zebra"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"entry": "x"}\n')
    assert main(["revdict-add", model, str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err

    # Encode: a Parquet file with the same vectors as the library's encoder.
    from defsentflow.encoders import encode_texts

    src = tmp_path / "s.txt"
    src.write_text("a small dog\n\nthe king of a country\n")
    out_file = tmp_path / "vecs.parquet"
    assert main(["encode", model, "--input", str(src), "--out", str(out_file), "--pooling", "mean"]) == 0
    table = pq.read_table(out_file)
    assert table.column("text").to_pylist() == ["a small dog", "the king of a country"]
    vecs = np.array(table.column("embedding").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(vecs, encode_texts(model, ["a small dog", "the king of a country"], pooling="mean",
                                                  device="cpu"), atol=1e-5)


def test_cli_errors_are_clear(home, tmp_path, tiny_bert_dir, capsys):
    assert main(["train", "pst", str(tmp_path / "missing.yaml")]) == 2
    assert "config not found" in capsys.readouterr().err
    assert main(["train", "pst", _config(tmp_path, tiny_bert_dir, dictionary="nope")]) == 2
    assert "nope" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": \n')
    assert main(["encode", str(tiny_bert_dir), "--input", str(bad), "--out", str(tmp_path / "o.parquet")]) == 2
    assert f"{bad}:2" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()


def test_train_defsent_in_process_then_through_its_flow(toy_dataset, tiny_bert_dir, tmp_path, capsys):
    """``train defsent`` runs in process, and with ``--prefect`` through its flow, which finds it cached."""
    body = {"name": "t", "dictionary": {"name": "toy", "sources": [{"kind": "jsonl", "paths": ["toy.jsonl"]}]},
            "harvest": None,
            "defsent": {"method": "defsent_plus", "base_model": str(tiny_bert_dir), "dictionary": "toy",
                        "pooling": "mean", "lr": 5e-4, "batch_size": 8, "max_length": 32, "device": "cpu"}}
    cfg = tmp_path / "defsent.yaml"
    cfg.write_text(json.dumps(body))
    assert main(["train", "defsent", str(cfg), "--run-id", "ds1"]) == 0
    first = capsys.readouterr().out
    assert "run ds1 done" in first and "defsent_plus:" in first
    # Through Prefect in a subprocess: a flow run under capsys would bind Prefect's console log
    # handler to a capture stream that is closed after this test.
    proc = subprocess.run([sys.executable, "-m", "defsentflow.cli", "train", "defsent", str(cfg), "--run-id", "ds2",
                           "--prefect"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    second = proc.stdout
    assert "run ds2 done" in second
    model_line = [line for line in first.splitlines() if line.startswith("defsent_plus:")][0]
    assert model_line in second  # the same model: the flow reused the in-process run's artifact
