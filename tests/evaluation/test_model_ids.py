"""Ids that `defsentflow leaderboard` prints work in every command that takes a model (the one
lookup, defsentflow/model/lookup.py): encode and an unrecorded eval included."""

from __future__ import annotations

import pyarrow.parquet as pq

from defsentflow.cli import main
from defsentflow.storage import Catalog


def test_encode_and_an_unrecorded_eval_take_an_id_from_the_leaderboard(home, tiny_bert_dir, tmp_path, capsys,
                                                                         sts_data_dir):
    Catalog().register_model("pst-demo-2", tiny_bert_dir, method="pst", pooling="mean")
    src = tmp_path / "s.txt"
    src.write_text("a small animal\nthe river\n")
    assert main(["encode", "pst-demo-2", "--input", str(src), "--out", str(tmp_path / "v.parquet")]) == 0
    assert pq.read_table(tmp_path / "v.parquet").num_rows == 2
    assert main(["eval", "pst-demo-2", "--no-record", "--tasks", "sts12", "--data-dir", str(sts_data_dir)]) == 0
    capsys.readouterr()
    assert main(["encode", "pst-demo-3", "--input", str(src), "--out", str(tmp_path / "w.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("defsentflow: error: unknown model 'pst-demo-3'") and "newest ids: pst-demo-2" in err
    assert len(err.splitlines()) == 1
    runs = Catalog().query("SELECT count(*) AS n FROM runs")[0]["n"]
    assert main(["eval", "pst-demo-3", "--tasks", "sts12", "--data-dir", str(sts_data_dir)]) == 2
    assert "unknown model 'pst-demo-3'" in capsys.readouterr().err
    assert Catalog().query("SELECT count(*) AS n FROM runs")[0]["n"] == runs  # no failed run left behind
