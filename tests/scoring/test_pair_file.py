"""``pairs.source: file``: a harvest that labels the pairs of a file of unlabelled sentence pairs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from defsentflow.scoring.pair_file import PairFile, read_pair_file, sample_pairs
from defsentflow.scoring.stages import run_harvest
from tests.scoring.helpers import harvest_config, write_text_corpus

STS_LINES = [  # the STS-B csv layout: genre, file, year, id, score, sentence1, sentence2
    "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane is taking off.",
    "main-captions\tMSRvid\t2012test\t0004\t3.800\tA man is playing a large flute.\tA man is playing a flute.",
    "main-news\theadlines\t2013\t0002\t0.500\tA man is playing a flute.\tStocks fell in early   trading.",
    "main-forums\tdeft\t2014\t0007\t1.000\tStocks fell in early trading.\tA plane is taking off.\textra\tcolumns",
]


@pytest.fixture()
def corpus_dir(tmp_path):
    return write_text_corpus(tmp_path / "corpus")


def _sts_file(tmp_path):
    path = tmp_path / "sts-train.csv"
    path.write_text("\n".join(STS_LINES) + "\n\n")
    return path


def test_read_pair_file_reads_only_the_sentence_columns(tmp_path):
    pf = read_pair_file(_sts_file(tmp_path), columns=(5, 6))
    assert pf.texts[:3] == ("A plane is taking off.", "An air plane is taking off.", "A man is playing a large flute.")
    assert len(pf.pairs) == 4 and len(pf.texts) == 5  # shared sentences are one text; spaces normalised
    assert pf.texts[pf.pairs[2, 1]] == "Stocks fell in early trading." == pf.texts[pf.pairs[3, 0]]
    assert not any("5.000" in t or "3.800" in t for t in pf.texts)  # the gold score column is never read

    sick = tmp_path / "sick.txt"
    sick.write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\n1\tA dog runs.\tA cat sleeps.\t2.5\n")
    pf = read_pair_file(sick, columns=(1, 2), header=True)
    assert pf.texts == ("A dog runs.", "A cat sleeps.") and pf.pairs.tolist() == [[0, 1]]

    parquet = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"s1": ["one two", "three"], "s2": ["three", "four"]}), parquet)
    assert read_pair_file(parquet).pairs.tolist() == [[0, 1], [1, 2]]


def test_pair_file_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("a b\tc d\nonly one column\n")
    with pytest.raises(ValueError, match=r"bad\.tsv: line 2: 1 tab-separated columns"):
        read_pair_file(bad)
    bad.write_text("a b\t   \n")
    with pytest.raises(ValueError, match="line 1: empty sentence"):
        read_pair_file(bad)
    bad.write_bytes(b"a\tb\n\xff\tc\n")
    with pytest.raises(ValueError, match="line 2: not valid UTF-8"):
        read_pair_file(bad)
    parquet = tmp_path / "p.parquet"
    pq.write_table(pa.table({"s1": ["x"]}), parquet)
    with pytest.raises(ValueError, match="no s2 column"):
        read_pair_file(parquet)


def test_sample_pairs_is_seeded_and_batched(tmp_path):
    pf = read_pair_file(_sts_file(tmp_path), columns=(5, 6))
    batches = sample_pairs(pf, 3, 0, 2)
    rows = np.concatenate(batches)
    assert [len(b) for b in batches] == [2, 1] and len(set(rows.tolist())) == 3 and (np.diff(rows) > 0).all()
    assert np.array_equal(rows, np.concatenate(sample_pairs(pf, 3, 0, 2)))
    assert np.concatenate(sample_pairs(pf, 10, 0, 2)).tolist() == [0, 1, 2, 3]


def test_a_subset_keeps_its_pairs_and_only_their_sentences():
    pf = PairFile(("a", "b", "c", "d", "e"), np.array([[0, 1], [2, 3], [1, 4], [3, 0]]))
    sub = pf.subset(np.array([1, 3]))
    assert sub.texts == ("c", "d", "a")  # order of first use; "b" and "e" are not encoded
    assert [[sub.texts[i] for i in row] for row in sub.pairs.tolist()] == [["c", "d"], ["d", "a"]]


def test_harvest_labels_the_pairs_of_a_file(corpus_dir, tiny_bert_dir, home, tmp_path):
    path = _sts_file(tmp_path)
    pairs = {"source": "file", "file": str(path), "file_columns": [5, 6], "n_pairs": 3, "similarity": "centered_cosine"}
    cfg = harvest_config(corpus_dir, tiny_bert_dir, home, pairs=pairs, batch_size=2)
    res = run_harvest(cfg, run_id="f1")
    t = pq.read_table(res["path"])
    assert t.num_rows == 3 and set(t.column("kind").to_pylist()) == {"file"}
    pf = read_pair_file(path, columns=(5, 6))
    rows = np.concatenate(sample_pairs(pf, 3, cfg.seed, 2))
    assert t.column("s1").to_pylist() == [pf.texts[i] for i in pf.pairs[rows, 0]]
    assert t.column("s2").to_pylist() == [pf.texts[i] for i in pf.pairs[rows, 1]]
    scores = t.column("score").to_numpy()
    assert np.isfinite(scores).all() and (np.abs(scores) <= 1 + 1e-5).all()
    assert run_harvest(cfg)["cached"]

    corpus_run = run_harvest(harvest_config(corpus_dir, tiny_bert_dir, home))
    assert corpus_run["key"] != res["key"]
    other_columns = harvest_config(corpus_dir, tiny_bert_dir, home, batch_size=2,
                                   pairs={**pairs, "file_columns": [6, 5]})
    assert run_harvest(other_columns)["key"] != res["key"]


def test_file_source_needs_a_file(corpus_dir, tiny_bert_dir, home):
    with pytest.raises(ValueError, match="pairs.file is not set"):
        harvest_config(corpus_dir, tiny_bert_dir, home, pairs={"source": "file"})
    with pytest.raises(ValueError, match="file_columns"):
        harvest_config(corpus_dir, tiny_bert_dir, home, pairs={"source": "file", "file": "x", "file_columns": [1, 1]})


def test_cli_train_surrogate_from_a_catalog_model_on_file_pairs(corpus_dir, tiny_bert_dir, home, tmp_path, capsys):
    import yaml

    from defsentflow.cli import main
    from defsentflow.storage import Catalog

    pairs = {"source": "file", "file": str(_sts_file(tmp_path)), "file_columns": [5, 6]}
    cfg = harvest_config(corpus_dir, tiny_bert_dir, home, pairs=pairs, batch_size=2,
                         surrogate={"base_encoder": str(tmp_path / "not-this-one"), "loss": "cosent",
                                    "shuffle_labels": True})
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    Catalog(home).register_model("raw-test", tiny_bert_dir, method="pretrain", pooling="mean")
    assert main(["--quiet", "train", "surrogate", str(path), "--base-encoder", "raw-test"]) == 0
    assert "4 pairs" in capsys.readouterr().out
    row = Catalog(home).query("SELECT base_model, meta FROM models WHERE method = 'surrogate'")
    assert len(row) == 1 and row[0]["base_model"] == str(tiny_bert_dir)
    assert main(["train", "surrogate", str(path), "--base-encoder", str(tmp_path / "missing")]) == 2


@pytest.mark.slow
def test_the_flow_on_dask_labels_file_pairs_as_the_library_does(prefect_test_harness, corpus_dir, tiny_bert_dir, tmp_path, monkeypatch):
    from defsentflow.flows.harvest_pairs import run_harvest_flow

    pairs = {"source": "file", "file": str(_sts_file(tmp_path)), "file_columns": [5, 6], "similarity": "centered_cosine"}
    seq_root, dask_root = tmp_path / "seq", tmp_path / "dask"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(seq_root))
    sequential = run_harvest(harvest_config(corpus_dir, tiny_bert_dir, seq_root, pairs=pairs, batch_size=2))
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(dask_root))
    cfg = harvest_config(corpus_dir, tiny_bert_dir, dask_root, pairs=pairs, batch_size=2,
                         compute={"local_workers": 2})
    flowed = run_harvest_flow(cfg.model_dump(mode="json"))
    assert flowed["key"] == sequential["key"] and flowed["batches_computed"] == 2
    a, b = pq.read_table(sequential["path"]), pq.read_table(flowed["path"])
    assert a.drop_columns(["score"]).equals(b.drop_columns(["score"]))
    np.testing.assert_allclose(a.column("score").to_numpy(), b.column("score").to_numpy(), atol=1e-6)
