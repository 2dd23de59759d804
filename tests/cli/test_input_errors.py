"""Bad input to a command: one line on stderr that names the file (or the option), exit status 2.

Every case fails while reading its input, before a model, a corpus or Prefect is loaded. Commands
whose input errors are tested beside their stage (``train pst`` with a missing config, ``eval``,
``encode``, ``revdict-add``, ``harvest``, ``report``, ``ingest dictionary``) are not repeated here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from defsentflow.cli import main
from tests.cli_output import without_root_line

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def typo_config(tmp_path) -> Path:
    """configs/demo.yaml with one top-level key misspelt."""
    data = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    data["nmae"] = data.pop("name")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture()
def bare_config(tmp_path) -> Path:
    """A YAML mapping with none of the sections a command looks for."""
    path = tmp_path / "bare.yaml"
    path.write_text("name: bare\n")
    return path


def _one_line_error(capsys) -> str:
    err = without_root_line(capsys.readouterr().err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("defsentflow: error: "), err
    return lines[0]


@pytest.mark.parametrize("argv", [
    ["run", "{missing}"],
    ["best-model", "{missing}"],
    ["train", "defsent", "{missing}"],
    ["train", "surrogate", "{missing}"],
    ["train", "surrogate", "{missing}"],
    ["pretrain", "{missing}"],
    ["sweep", "run", "{missing}"],
    ["sweep", "table", "{missing}"],
], ids=" ".join)
def test_a_missing_config_is_named(argv, home, tmp_path, capsys):
    missing = tmp_path / "no-such.yaml"
    assert main([a.format(missing=missing) for a in argv]) == 2
    assert str(missing) in _one_line_error(capsys)


@pytest.mark.parametrize("command", [["run"], ["train", "pst"], ["best-model"]], ids=" ".join)
def test_a_misspelt_key_names_the_file_and_the_key(command, typo_config, home, capsys):
    assert main([*command, str(typo_config)]) == 2
    line = _one_line_error(capsys)
    assert str(typo_config) in line and "nmae: unknown key; did you mean 'name'?" in line


def test_a_key_far_from_any_gets_the_keys_of_its_section(home, tmp_path, capsys):
    data = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    data["pst"]["zzz"] = 1
    path = tmp_path / "far.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path)]) == 2
    line = _one_line_error(capsys)
    assert "pst.zzz: unknown key (keys here: " in line and "base_model, batch_size" in line and "did you" not in line


@pytest.mark.parametrize("command, section", [
    (["train", "defsent"], "defsent"),
    (["pretrain"], "pretrain"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_config_without_the_section_says_which(command, section, bare_config, home, capsys):
    assert main([*command, str(bare_config)]) == 2
    line = _one_line_error(capsys)
    assert str(bare_config) in line and f"no '{section}:' section" in line


def test_a_config_that_is_not_a_mapping(tmp_path, home, capsys):
    listed = tmp_path / "list.yaml"
    listed.write_text("- name: x\n")
    assert main(["train", "pst", str(listed)]) == 2
    assert f"{listed}: expected a mapping" in _one_line_error(capsys)


def test_bad_numbers_in_options_are_user_errors(tmp_path, home, capsys):
    assert main(["ingest", "corpus", str(tmp_path), "--name", "x", "--chunk-sentences", "0"]) == 2
    assert "--chunk-sentences must be >= 1, got 0" in _one_line_error(capsys)
    assert main(["pretrain", str(ROOT / "configs" / "raw-tiny.yaml"), "--stop-after-steps", "0"]) == 2
    assert "--stop-after-steps must be >= 1" in _one_line_error(capsys)
    assert not any(home.iterdir()), "a rejected option wrote to the data root"


def test_a_missing_corpus_path_is_named(tmp_path, home, capsys):
    missing = tmp_path / "no-such-dir"
    assert main(["ingest", "corpus", str(missing), "--name", "x"]) == 2
    assert str(missing) in _one_line_error(capsys)
