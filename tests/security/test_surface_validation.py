"""Issue 22 facts 10 (first half) and 12: non-finite vectors and scores never leave the product;
the small validation holes of the CLI answer with one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from safetensors.torch import load_file, save_file

from defsentflow.cli import main
from tests.cli_output import without_root_line

DEFS = {"cat": "a small animal that lives in a house", "river": "water that moves to the sea",
        "king": "the man who is ruler of a country", "apple": "a round red fruit that is sweet"}


def _one_line(capsys, argv: list[str]) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    err = without_root_line(err)
    assert rc == 2, (out, err)
    assert err.startswith("defsentflow: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def _corrupt(model_dir: Path) -> None:
    """Same-size damage: every weight becomes NaN (the file keeps its size and layout)."""
    f = next(model_dir.glob("*.safetensors"))
    weights = {k: v.clone().fill_(float("nan")) if v.is_floating_point() else v for k, v in load_file(f).items()}
    save_file(weights, f, metadata={"format": "pt"})


@pytest.fixture()
def sentences(tmp_path) -> Path:
    src = tmp_path / "s.txt"
    src.write_text("a small cat\nthe river\n")
    return src


@pytest.mark.parametrize(("flag", "value", "message"), [("--max-length", "-5", "must be >= 1, got -5"),
                                                        ("--max-length", "0", "must be >= 1, got 0"),
                                                        ("--batch-size", "0", "must be >= 1, got 0"),
                                                        ("--batch-size", "99999999", "must be <= 65536")])
def test_encode_bounds_are_one_line(home, tmp_path, capsys, sentences, flag, value, message):
    err = _one_line(capsys, ["encode", "m", "--input", str(sentences), "--out", str(tmp_path / "o.parquet"), flag, value])
    assert f"{flag} {message}" in err


def test_encode_refuses_a_huge_line_before_loading(home, tmp_path, capsys):
    from defsentflow.cli.encode import MAX_SENTENCE_CHARS

    src = tmp_path / "big.txt"
    src.write_text("ok\n" + "x" * (MAX_SENTENCE_CHARS + 1) + "\n")
    err = _one_line(capsys, ["encode", "/no/such/model", "--input", str(src), "--out", str(tmp_path / "o.parquet")])
    assert "big.txt:2: line has" in err and f"limit {MAX_SENTENCE_CHARS}" in err


def test_encode_of_a_corrupt_model_writes_nothing(home, tmp_path, capsys, sentences, tiny_bert_dir, monkeypatch):
    monkeypatch.setenv("DEFSENTFLOW_QUIET", "1")  # no progress bar on stderr
    bad = tmp_path / "bad-model"
    shutil.copytree(tiny_bert_dir, bad)
    _corrupt(bad)
    out = tmp_path / "o.parquet"
    rc = main(["encode", str(bad), "--input", str(sentences), "--out", str(out), "--device", "cpu"])
    err = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()  # a weight-loading bar may come first
    assert rc == 2 and err[-1].startswith(f"defsentflow: error: model {bad}: finite-value check failed")
    assert not any("Traceback" in line for line in err) and not out.exists()


def test_revdict_and_serve_refuse_nan_from_a_corrupt_model(home, tmp_path, tiny_bert_dir):
    from fastapi.testclient import TestClient

    from defsentflow.encoders.finite import NonFiniteError
    from defsentflow.revdict import RevdictIndex, build_revdict_index
    from defsentflow.serve.app import create_app
    from defsentflow.storage import Catalog

    model = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model)
    table = pa.table({"entry": list(DEFS), "definition": list(DEFS.values()), "split": ["test"] * len(DEFS)})
    index = build_revdict_index(str(model), table, mode="cosine", device="cpu")
    assert index.search(["a small animal"], k=2)[0]  # sound before the damage
    Catalog().register_model("m1", model, method="pst", pooling="mean")
    _corrupt(model)
    with pytest.raises(NonFiniteError, match=r"finite-value check failed: 1 of 1 query vectors"):
        RevdictIndex(index.path).search(["a small animal"], k=2)
    with TestClient(create_app(home, max_batch=1, device="cpu")) as client:
        r = client.get("/api/revdict", params={"q": "a small animal", "model": "m1"})
    assert r.status_code == 500 and "finite-value check failed" in r.json()["detail"]


def test_search_score_checks():
    from defsentflow.encoders.finite import NonFiniteError, require_search_scores

    ids = np.array([[0, 1]])
    require_search_scores(np.array([[0.9, 0.1]]), ids, model="m", normalized=True, k=2)
    with pytest.raises(NonFiniteError, match="score-range check"):
        require_search_scores(np.array([[1.09e38, 0.1]]), ids, model="m", normalized=True, k=2)
    with pytest.raises(NonFiniteError, match="finite-value check"):
        require_search_scores(np.array([[np.nan, 0.1]]), ids, model="m", normalized=False, k=2)
    with pytest.raises(NonFiniteError, match="fewer than 2 hits"):
        require_search_scores(np.array([[0.5, -3.4e38]]), np.array([[0, -1]]), model="m", normalized=False, k=2)


def test_revdict_ranks_refuse_nan_vectors():
    from defsentflow.encoders.finite import NonFiniteError
    from defsentflow.evaluation.revdict import revdict_ranks

    defs = np.ones((4, 3))
    defs[1, 0] = np.nan  # argsort of NaN scores would still give finite ranks and a plausible MRR
    with pytest.raises(NonFiniteError, match="definition vectors hold NaN"):
        revdict_ranks(np.ones((1, 3)), np.array([0]), defs, np.array([0, 0, 1, 1]), 2, cosine=True)


def test_evaluation_refuses_to_record_nan(home):
    from defsentflow.encoders.finite import NonFiniteError
    from defsentflow.evaluation.suite import EvalResult, record_evaluation
    from defsentflow.storage import Catalog

    result = EvalResult(model="m", pooling="mean",
                        rows=({"task": "stsb-dev", "setting": "all", "metric": "spearman", "value": float("nan")},))
    cat = Catalog()
    with pytest.raises(NonFiniteError, match="model m: finite-value check failed: 1 of 1 scores"):
        record_evaluation(cat, "m", result)
    assert cat.query("SELECT count(*) AS n FROM metrics")[0]["n"] == 0


@pytest.mark.parametrize("bad", ["\x00", "\u202e", "\u2066"])
def test_revdict_add_refuses_what_ingest_quarantines(home, tmp_path, capsys, bad):
    f = tmp_path / "add.tsv"
    f.write_text(f"dog\ta loyal animal\nca{bad}t\ta small animal\n")
    err = _one_line(capsys, ["revdict-add", "/no/such/model", str(f)])
    assert "add.tsv:2: control_character: entry has" in err


@pytest.mark.parametrize("query", ["", "   ", "x" * 5000])
def test_revdict_refuses_an_empty_or_huge_query(home, capsys, query):
    err = _one_line(capsys, ["revdict", "/no/such/model", query])
    assert "definition 1" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["ingest", "dictionary", "--name", "d", "--source", "tsv", "x.tsv", "--workers", "100000"], "--workers must be <= 256"),
    (["origin", "configs/demo.yaml", "--top-n", "-1"], "--top-n must be >= 1, got -1"),
    (["revdict", "m", "a definition", "-k", "0"], "-k must be >= 1, got 0"),
    (["ingest", "corpus", "x", "--name", "c", "--workers", "0"], "--workers must be >= 1, got 0")])
def test_counts_on_the_command_line_are_bounded(home, capsys, argv, message):
    assert message in _one_line(capsys, argv)
    assert not any(home.iterdir()), "a refused option wrote to the data root"
