"""One data-root rule, said by every command that writes: config home: > --home / $DEFSENTFLOW_HOME >
the checkout's storage/ (or ~/.local/share/defsentflow), never the current directory."""

from __future__ import annotations

from pathlib import Path

import defsentflow.storage.paths as paths
from defsentflow.cli import main
from defsentflow.cli.home import use_data_root
from defsentflow.storage.paths import choose_data_root, default_data_root

REPO = Path(__file__).resolve().parents[2]


def test_the_rule_in_order(tmp_path, monkeypatch):
    cfg = tmp_path / "configs" / "x.yaml"
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(tmp_path / "env"))
    monkeypatch.chdir(tmp_path)  # the current directory decides nothing
    assert choose_data_root("../data", cfg) == ((tmp_path / "data").resolve(), f"home: in {cfg}")  # the config's folder
    assert choose_data_root(None, cfg) == ((tmp_path / "env").resolve(), "--home / $DEFSENTFLOW_HOME")
    monkeypatch.delenv("DEFSENTFLOW_HOME")
    assert choose_data_root() == (default_data_root().resolve(), "default")
    assert default_data_root() == REPO / "storage"  # an editable install: the checkout's storage/


def test_a_new_default_root_says_so_once_and_how_to_choose_another(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DEFSENTFLOW_HOME", raising=False)
    monkeypatch.setattr(paths, "default_data_root", lambda: tmp_path / "user" / "defsentflow")
    root = use_data_root()
    assert root == (tmp_path / "user" / "defsentflow").resolve()
    out = capsys.readouterr().err
    assert out == (f"data root: {root} (new, the default; choose another with --home DIR, $DEFSENTFLOW_HOME "
                   "or home: in the config)\n")
    use_data_root()
    assert capsys.readouterr().err == ""  # said once per process


def test_writing_commands_print_the_root_and_readers_do_not(home, tmp_path, capsys):
    words = tmp_path / "w.tsv"
    words.write_text("cat\ta small animal\n")
    assert main(["ingest", "dictionary", "--source", "tsv", str(words), "--name", "w"]) == 0
    out = capsys.readouterr()
    assert out.err.startswith(f"data root: {home.resolve()} (--home / $DEFSENTFLOW_HOME)\n")  # on stderr, first
    assert "data root" not in out.out
    assert main(["sql", "SELECT 1 AS one"]) == 0
    assert "data root" not in str(capsys.readouterr())
