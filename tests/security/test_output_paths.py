"""Issue 22 fact 1: no command removes or overwrites what it did not write (`report --out`, `encode --out`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from defsentflow.cli import main
from tests.cli_output import without_root_line


def _foreign(folder: Path) -> Path:
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.txt").write_text("years of work")
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return folder


def _intact(folder: Path) -> None:
    assert (folder / "thesis.txt").read_text() == "years of work"
    assert (folder / "sub" / "data.csv").read_text() == "a,b\n1,2\n"


def _one_line(capsys, argv: list[str]) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    err = without_root_line(err)
    assert rc == 2, (out, err)
    assert err.startswith("defsentflow: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.fixture()
def a_run(home):
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.start_run("evaluate", config={"name": "x"}, run_id="r1")
    cat.end_run("r1", "completed", flow="evaluate")
    (home / "models").mkdir()
    (home / "models" / "weights.bin").write_bytes(b"w" * 1000)
    return "r1"


def _root_intact(home: Path) -> None:
    assert (home / "models" / "weights.bin").read_bytes() == b"w" * 1000
    assert (home / "catalog.duckdb").is_file()


def test_report_out_foreign_folder_is_refused(a_run, home, tmp_path, capsys):
    mine = _foreign(tmp_path / "mine")
    err = _one_line(capsys, ["report", a_run, "--out", str(mine), "--no-analyse"])
    assert "not written by defsentflow" in err and str(mine) in err
    _intact(mine)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "mine"]  # no temporary left


@pytest.mark.parametrize("where", ["root", "ancestor", "inside"])
def test_report_out_data_root_is_refused(a_run, home, capsys, where):
    target = {"root": home, "ancestor": home.parent, "inside": home / "models"}[where]
    err = _one_line(capsys, ["report", a_run, "--out", str(target), "--no-analyse"])
    assert "data root" in err
    _root_intact(home)


def test_report_out_replaces_only_its_own_output(a_run, home, tmp_path, capsys):
    out = tmp_path / "rep"
    for _ in range(2):
        assert main(["report", a_run, "--out", str(out), "--no-analyse"]) == 0
    assert (out / "report.html").is_file()
    (out / "my-notes.txt").write_text("mine")
    capsys.readouterr()
    err = _one_line(capsys, ["report", a_run, "--out", str(out), "--no-analyse"])
    assert "my-notes.txt" in err and (out / "my-notes.txt").read_text() == "mine"


@pytest.fixture()
def sentences(tmp_path) -> Path:
    src = tmp_path / "s.txt"
    src.write_text("a small cat\nthe river\n")
    return src


def test_encode_out_foreign_file_and_data_root_are_refused(home, tmp_path, capsys, sentences, tiny_bert_dir):
    mine = _foreign(tmp_path / "mine")
    foreign = tmp_path / "mine" / "theirs.parquet"
    foreign.write_bytes(b"PAR1 not ours")
    (mine / "d.parquet").mkdir()
    for out in (foreign, home / "v.parquet", mine / "d.parquet", home.parent / "x" / ".." / "home" / "v.parquet"):
        argv = ["encode", str(tiny_bert_dir), "--input", str(sentences), "--out", str(out), "--device", "cpu"]
        err = _one_line(capsys, argv)
        assert "refusing to write the encode output" in err
    assert foreign.read_bytes() == b"PAR1 not ours"
    _intact(mine)
    assert not (home / "v.parquet").exists()


def test_encode_out_replaces_its_own_parquet(home, tmp_path, capsys, sentences, tiny_bert_dir):
    out = tmp_path / "v.parquet"
    for _ in range(2):
        assert main(["encode", str(tiny_bert_dir), "--input", str(sentences), "--out", str(out), "--device", "cpu"]) == 0
    assert pq.read_table(out).num_rows == 2
    assert pq.read_schema(out).metadata[b"defsentflow.output"] == b"encode"
