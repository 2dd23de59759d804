"""Issue 22 fact 6: every count in a config has a maximum; paths are checked when a run starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from defsentflow.cli import main
from defsentflow.config import load_config
from defsentflow.config_tools import LIMITS
from defsentflow.preflight import preflight
from tests.cli_output import without_root_line

REPO = Path(__file__).resolve().parents[2]
DEMO = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())


def _write(tmp_path: Path, section: str, key: str, value) -> Path:
    data = yaml.safe_load(yaml.safe_dump(DEMO))
    data[section][key] = value
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("section", "key", "value"), [
    ("pst", "steps", 99999999999999999999999999), ("pst", "steps", 1000000), ("pst", "seeds", [-1]),
    ("pst", "seeds", [99999999999999999999]), ("pst", "batch_size", 10**9), ("pst", "max_length", 10**6),
    ("pst", "max_train_entries", 10**12), ("dictionary", "workers", 100000), ("dictionary", "seed", -1),
    ("eval", "revdict_max_queries", 10**12)])
def test_counts_past_their_maximum_name_the_file_and_key(tmp_path, section, key, value):
    path = _write(tmp_path, section, key, value)
    with pytest.raises(ValueError) as exc:
        load_config(path)
    msg = str(exc.value)
    assert str(path) in msg and f"{section}.{key}" in msg and "\n" not in msg


def test_limits_table_is_documented():
    doc = (REPO / "docs" / "security.md").read_text()
    for name, value in LIMITS.items():
        assert f"| `{name}` | {value:,} |" in doc, name


def test_paper_and_demo_configs_load_offline_and_their_bounds_hold():
    for path in sorted((REPO / "configs").glob("*.yaml")):
        text = path.read_text()
        if "\ndictionary:" in text and ("\npst:" in text or "\ndefsent:" in text):
            load_config(path)  # no path is checked at load: the paper data may live elsewhere


@pytest.mark.parametrize(("section", "key", "value", "message"), [
    ("pst", "base_model", "../../../../etc", "pst.base_model: '../../../../etc' is a folder but not a model directory"),
    ("pst", "base_model", "<img src=x onerror=alert(1)>", "neither a model directory nor a Hugging Face model id"),
    ("pst", "base_model", "/no/such/model", "is not a model directory"),
])
def test_preflight_refuses_bad_model_references(tmp_path, section, key, value, message):
    cfg = load_config(_write(tmp_path, section, key, value))  # loads: the check is the preflight's
    with pytest.raises(ValueError, match="c.yaml: ") as exc:
        preflight(cfg, str(tmp_path / "c.yaml"))
    assert message in str(exc.value)


@pytest.mark.parametrize(("kind", "path", "message"), [
    ("jsonl", "/etc/passwd", "a jsonl source is a .jsonl/.json/.ndjson file"),
    ("oewn", "/etc/passwd", "an oewn source is a directory of YAML files"),
    ("oewn", "/etc", "holds no *.yaml"),
    ("tsv", "/no/such.tsv", "not found"),
])
def test_preflight_checks_dictionary_sources(tmp_path, kind, path, message):
    data = yaml.safe_load(yaml.safe_dump(DEMO))
    data["dictionary"]["sources"] = [{"kind": kind, "paths": [path]}]
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="dictionary.sources.0..paths.0.: ") as exc:
        preflight(load_config(cfg_path), str(cfg_path))
    assert message in str(exc.value)


def test_demo_config_passes_preflight():
    preflight(load_config(REPO / "configs" / "demo.yaml"), "configs/demo.yaml")


def test_run_refuses_before_starting_anything(home, tmp_path, capsys):
    path = _write(tmp_path, "pst", "base_model", "../../../../etc")
    assert main(["run", str(path)]) == 2
    err = without_root_line(capsys.readouterr().err)
    assert err.count("\n") == 1 and "pst.base_model" in err and str(path) in err
    assert not any(home.iterdir()), "nothing is written before the preflight passes"


def test_sweep_run_preflights_every_point(home, tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"name: s\nbase: {REPO / 'configs' / 'demo.yaml'}\naxes:\n  pst.base_model: [minilm, ../../../../etc]\n")
    assert main(["sweep", "run", str(sweep)]) == 2
    err = without_root_line(capsys.readouterr().err)
    assert err.count("\n") == 1 and "pst.base_model: '../../../../etc'" in err and "point " in err
    assert not (home / "catalog.duckdb").exists()


def test_preflight_corpus_paths_and_tokenizer(tmp_path, monkeypatch):
    from defsentflow.preflight import check_exists, check_model_ref

    check_exists(str(tmp_path), "pretrain.corpora[0].paths[0]")
    with pytest.raises(ValueError, match=r"pretrain.corpora\[0\].paths\[0\]: not found"):
        check_exists(str(tmp_path / "gone"), "pretrain.corpora[0].paths[0]")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    check_model_ref("bert-base-uncased", "pretrain.tokenizer")  # a Hugging Face id the hub may be asked for
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="pretrain.tokenizer: unknown model 'bert-base-uncased'"):
        check_model_ref("bert-base-uncased", "pretrain.tokenizer")  # offline and not in the local cache
    with pytest.raises(ValueError, match="pretrain.tokenizer"):
        check_model_ref("a/b/c/../../d", "pretrain.tokenizer")
