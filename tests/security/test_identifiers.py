"""Identifiers that become paths: one pattern where they enter, and paths kept under the data root."""

from __future__ import annotations

import os

import pytest

from defsentflow.cli import main
from defsentflow.dictionary.config import DictionaryConfig, SourceSpec
from defsentflow.report.run_report import report_dir
from defsentflow.storage import Catalog, check_identifier, under_root

BAD_IDS = ["../escape", "../../tmp/evil", "/tmp/evil", "a/b", "..", ".", ".hidden", "-rf", "", " ", "run id",
           "a\\b", "a\x00b", "run\n2", "x" * 129, "caf\u00e9", "\u202erun", "~root", "$HOME", "a;b"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_identifiers_are_refused(bad):
    with pytest.raises(ValueError, match="is not allowed"):
        check_identifier(bad, "run id")


@pytest.mark.parametrize("good", ["r1", "pipeline-2f3a9c1d", "oewn.v2", "A_b-c.d", "x" * 128])
def test_good_identifiers_pass(good):
    assert check_identifier(good) == good


@pytest.mark.parametrize("parts", [("..", "x"), ("a", "..", "..", "x"), ("/etc/passwd",), ("reports", "/tmp/x")])
def test_paths_that_escape_the_root_are_refused(tmp_path, parts):
    with pytest.raises(ValueError, match="escapes the data root"):
        under_root(tmp_path, *parts)


def test_a_symlink_out_of_the_root_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(tmp_path, root / "link")
    with pytest.raises(ValueError, match="escapes the data root"):
        under_root(root, "link", "x")
    assert under_root(root, "reports", "r1") == (root / "reports" / "r1").resolve()


@pytest.mark.parametrize("run_id", ["../outside", "/tmp/outside-abs", "a/../../outside"])
def test_report_run_id_is_checked_before_any_write(home, tmp_path, capsys, run_id):
    with pytest.raises(SystemExit) as exc:  # argparse: usage line, one error line, status 2
        main(["report", run_id])
    assert exc.value.code == 2
    assert "is not allowed" in capsys.readouterr().err
    assert not (home.parent / "outside").exists() and not os.path.exists("/tmp/outside-abs")


def test_argparse_rejection_exits_2(home, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["harvest", "configs/harvest-bbc.yaml", "--run-id", "../x"])
    assert exc.value.code == 2


def test_library_entry_points_check_too(home):
    with pytest.raises(ValueError, match="run id"):
        Catalog().start_run("x", run_id="../../x")
    with pytest.raises(ValueError, match="run id"):
        report_dir("../x")
    with pytest.raises(ValueError, match="dataset name"):
        DictionaryConfig(name="../x", sources=(SourceSpec(kind="tsv", paths=("a.tsv",)),))
