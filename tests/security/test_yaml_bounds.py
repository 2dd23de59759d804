"""Issue 22 fact 3: YAML alias bombs are refused before expansion; a sweep's size is capped first.

Each test checks the mechanism (the bound fires, nothing is expanded); the timeout is a guard.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from defsentflow.cli import main
from defsentflow.config_tools import MAX_YAML_ALIASES, YamlAliasError, expanded_size, load_yaml_text
from tests.cli_output import without_root_line

pytestmark = pytest.mark.timeout(20)

REPO = Path(__file__).resolve().parents[2]


def _bomb(levels: int = 9, width: int = 9) -> str:
    """A billion-laughs chain: ``width ** levels`` values from ``levels * width`` aliases."""
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_bomb_is_refused_on_the_node_graph(monkeypatch):
    constructed = []
    monkeypatch.setattr(yaml.SafeLoader, "construct_document",
                        lambda self, node: constructed.append(node) or pytest.fail("constructed"))
    with pytest.raises(YamlAliasError, match="expands to more than"):
        load_yaml_text(_bomb())
    assert constructed == []


def test_alias_count_is_bounded():
    many = "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_YAML_ALIASES + 1)) + "]\n"
    with pytest.raises(YamlAliasError, match=f"more than {MAX_YAML_ALIASES} YAML aliases"):
        load_yaml_text(many)
    assert load_yaml_text("a: &a {x: 1}\nb: *a\n") == {"a": {"x": 1}, "b": {"x": 1}}  # a few aliases are fine


def test_expanded_size_counts_copies_without_expanding():
    node = yaml.compose(_bomb(4, 3), Loader=yaml.SafeLoader)
    # l0 = 1 + 3 scalars = 4; l1 = 1 + 3 * 4 = 13; l2 = 40; l3 = 121; the mapping: 1 + 4 keys + 4 + 13 + 40 + 121
    assert expanded_size(node, 10**6) == 183
    with pytest.raises(YamlAliasError):
        expanded_size(node, 50)


@pytest.mark.parametrize("command", [["sweep", "show", "{}"], ["run", "{}"], ["claims", "{}", "--no-run"]])
def test_cli_readers_refuse_a_bomb_in_one_line(home, tmp_path, capsys, command):
    path = tmp_path / "bomb.yaml"
    path.write_text("name: bomb\nbase: {}\n" + _bomb())
    rc = main([str(path) if a == "{}" else a for a in command])
    err = without_root_line(capsys.readouterr().err)
    assert rc == 2 and err.count("\n") == 1 and str(path) in err and "alias" in err, err


def test_oewn_fallback_refuses_a_bomb(tmp_path):
    from defsentflow.dictionary.oewn_yaml import load_yaml

    path = tmp_path / "entries-a.yaml"
    path.write_text(_bomb())
    with pytest.raises(ValueError, match="entries-a.yaml: invalid YAML: the YAML expands"):
        load_yaml(path)


def _sweep(tmp_path: Path, axes: int, values: int) -> Path:
    lines = ["name: huge", f"base: {REPO / 'configs' / 'demo.yaml'}", "axes:"]
    lines += [f"  pst.lr: [{', '.join(f'{i + 1}.0e-6' for i in range(values))}]"]
    lines += [f"  pst.seed{k}: [{', '.join(str(i) for i in range(values))}]" for k in range(axes - 1)]
    path = tmp_path / "huge.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_sweep_point_count_is_capped_before_expanding(home, tmp_path, capsys, monkeypatch):
    import defsentflow.sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "_validate_point", lambda *a, **k: pytest.fail("expanded before the cap"))
    path = _sweep(tmp_path, 8, 10)  # 10**8 points
    for sub in ("show", "run", "table"):
        rc = main(["sweep", sub, str(path)])
        err = without_root_line(capsys.readouterr().err)
        assert rc == 2 and "100000000 points" in err and "--max-points" in err and err.count("\n") == 1, err
    rc = main(["sweep", "show", str(path), "--max-points", "99999999"])
    assert rc == 2 and "more than 99999999" in capsys.readouterr().err


@pytest.mark.parametrize("deep", ["a: " + "[" * 100_000 + "]" * 100_000,  # flow style
                                  "a:\n" + "".join("  " * i + "- \n" for i in range(1, 2000))])  # block style
def test_deep_yaml_is_one_line_naming_the_file(home, tmp_path, capsys, deep):
    """Issue 36: a deeply nested config was a RecursionError traceback; the composer now stops at the
    nesting bound (``LIMITS["nesting"]``), and the OEWN reader's C loader checks the node graph."""
    from defsentflow.config_tools import MAX_NESTING
    from defsentflow.dictionary.oewn_yaml import load_yaml

    path = tmp_path / "deep.yaml"
    path.write_text("name: deep\n" + deep)
    rc = main(["best-model", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and str(path) in err and f"nested deeper than {MAX_NESTING}" in err, err
    entries = tmp_path / "entries-a.yaml"
    entries.write_text("a: " + "[" * 500 + "]" * 500)
    with pytest.raises(ValueError, match=f"entries-a.yaml: invalid YAML: nested deeper than {MAX_NESTING}"):
        load_yaml(entries)
