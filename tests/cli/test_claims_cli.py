"""``defsentflow claims``: a bad claims file is one line on stderr naming the file, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from defsentflow.cli import main
from tests.cli_output import without_root_line

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", ["name: c\nbase: ../nowhere.yaml\n", "name: c\nbase: {}\nclaimz: []\n", "- a list\n"])
def test_bad_claims_file_is_one_line_and_exit_2(tmp_path, capsys, home, text):
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    assert main(["claims", str(path)]) == 2
    err = without_root_line(capsys.readouterr().err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("defsentflow: error:") and ("claims.yaml" in err or "nowhere.yaml" in err)


def test_unknown_claim_in_only_is_named(capsys, home):
    assert main(["claims", str(ROOT / "configs" / "claims-raw-ci.yaml"), "--only", "no_such_claim"]) == 2
    err = without_root_line(capsys.readouterr().err)
    assert len(err.strip().splitlines()) == 1 and "no_such_claim" in err and "more_entries_help" in err
