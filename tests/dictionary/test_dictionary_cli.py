from __future__ import annotations

import json

from defsentflow.cli import main
from defsentflow.storage import Catalog


def test_ingest_dictionary_command_prints_the_balanced_summary(home, write, capsys):
    tsv = write("a.tsv", "dog\ta canid\nbad\n")
    jsonl = write("b.jsonl", json.dumps({"entry": "dog", "definition": "a canid"}) + "\n")
    rc = main(["--quiet", "ingest", "dictionary", "--source", "tsv", str(tsv), "--source", "jsonl", str(jsonl),
               "--name", "cli", "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "read 3 = accepted 1 + duplicates 1 + excluded 0 + quarantined 1" in out
    assert "quarantine: malformed 1" in out and "dataset cli: built" in out
    assert Catalog().query("SELECT seed FROM dictionaries WHERE name = 'cli'")[0]["seed"] == 3

    assert main(["--quiet", "ingest", "dictionary", "--source", "tsv", str(tsv), "--source", "jsonl", str(jsonl),
                 "--name", "cli", "--seed", "3"]) == 0
    assert "dataset cli: unchanged" in capsys.readouterr().out

    assert main(["datasets"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("cli"))
    assert line.split()[:4] == ["cli", "a", "1", "1"]


def test_bad_input_exits_2_with_a_message_and_writes_nothing(home, write, tmp_path, capsys):
    tsv = write("a.tsv", "dog\ta canid\n")
    cases = [
        (["--source", "tsv", str(tmp_path / "gone.tsv")], "tsv source not found"),
        (["--source", "csv", str(tsv)], "unknown kind 'csv'"),
        (["--source", "tsv"], "give a kind and at least one path"),
        (["--source", "tsv", str(tsv), "--variant", "c"], "variant c needs a tokenizer"),
        (["--source", "tsv", str(tmp_path)], "must be a file"),
    ]
    for extra, message in cases:
        assert main(["--quiet", "ingest", "dictionary", "--name", "x", *extra]) == 2
        assert message in capsys.readouterr().err
    assert not (home / "parquet").exists()


def test_no_case_fold_flag(home, write, capsys):
    tsv = write("a.tsv", "Apple\ta company\napple\ta fruit\n")
    assert main(["--quiet", "ingest", "dictionary", "--source", "tsv", str(tsv), "--name", "cs", "--no-case-fold"]) == 0
    rows = Catalog().query("SELECT DISTINCT entry FROM definitions WHERE dataset = 'cs' ORDER BY 1")
    assert [r["entry"] for r in rows] == ["Apple", "apple"]
