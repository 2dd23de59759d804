"""Bad paths, pickled weights, undecodable or loosely typed configs: one-line errors, exit 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from defsentflow.cli import main
from defsentflow.config import load_config
from defsentflow.config_tools import load_yaml_text, read_yaml_mapping
from defsentflow.encoders import load_encoder, require_safetensors
from defsentflow.scoring.config import load_harvest_config
from defsentflow.sweep import load_sweep
from tests.cli_output import without_root_line

REPO = Path(__file__).resolve().parents[2]


def _one_line_error(capsys, argv: list[str]) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    err = without_root_line(err)
    assert rc == 2, (out, err)
    assert err.startswith("defsentflow: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def pickled_only_dir(tiny_bert_dir, tmp_path_factory) -> Path:
    """A model directory holding only pytorch_model.bin (and config/tokenizer files)."""
    d = tmp_path_factory.mktemp("bin-only")
    for f in tiny_bert_dir.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy(f, d / f.name)
    torch.save(load_file(next(tiny_bert_dir.glob("*.safetensors"))), d / "pytorch_model.bin")
    return d


@pytest.mark.parametrize("model", ["/nonexistent", "/nonexistent/model", "./no-such-dir", "~/no-such-model-dir"])
def test_encode_missing_model_is_one_line(home, tmp_path, capsys, model):
    src = tmp_path / "s.txt"
    src.write_text("a sentence\n")
    err = _one_line_error(capsys, ["encode", model, "--input", str(src), "--out", str(tmp_path / "o.parquet")])
    assert "model not found" in err
    assert not (tmp_path / "o.parquet").exists()


def test_encode_pickled_weights_are_refused(home, tmp_path, capsys, pickled_only_dir):
    src = tmp_path / "s.txt"
    src.write_text("a sentence\n")
    err = _one_line_error(capsys, ["encode", str(pickled_only_dir), "--input", str(src), "--out", str(tmp_path / "o.parquet")])
    assert "no *.safetensors weights" in err and "pytorch_model.bin" in err


def test_every_loader_requires_safetensors(pickled_only_dir, tiny_bert_dir):
    from defsentflow.scoring.generative import GenerativeScorer
    from defsentflow.training.surrogate import build_surrogate_model

    for load in (load_encoder, GenerativeScorer, lambda p: build_surrogate_model(p, device="cpu")):
        with pytest.raises(ValueError, match="pickled weights are refused"):
            load(str(pickled_only_dir))
    assert require_safetensors(str(tiny_bert_dir)) == str(tiny_bert_dir)
    with pytest.raises(ValueError, match="must be a directory"):
        require_safetensors(str(next(tiny_bert_dir.glob("*.safetensors"))))


# -- configs ---------------------------------------------------------------------------------

def _config(tmp_path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_non_utf8_config_names_the_file(tmp_path, capsys):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("name: caf\xe9\n".encode("latin-1"))
    for load in (load_config, load_harvest_config, load_sweep, read_yaml_mapping):
        with pytest.raises(ValueError, match=f"{bad}: not UTF-8"):
            load(bad)
    err = _one_line_error(capsys, ["train", "defsent", str(bad)])
    assert str(bad) in err and "not UTF-8" in err


@pytest.mark.parametrize("text,key", [
    ("name: a\nname: b\n", "name"),
    ("pst:\n  steps: 1\n  steps: 2\n", "steps"),
    ("eval: {pooling: mean, pooling: cls}\n", "pooling"),
])
def test_duplicate_keys_are_refused(tmp_path, text, key):
    with pytest.raises(ValueError, match=f"duplicate key '{key}'"):
        read_yaml_mapping(_config(tmp_path, text))


@pytest.mark.parametrize("text,value", [
    ("lr: 2e-5", 2e-5), ("lr: 2.0e-5", 2e-5), ("lr: -1E+3", -1000.0), ("lr: .5", 0.5), ("lr: 1e3", 1000.0),
    ("lr: 3", 3), ("lr: '2e-5'", "2e-5"), ("lr: 2e-5x", "2e-5x"), ("lr: true", True),
])
def test_yaml_12_floats(text, value):
    assert load_yaml_text(text)["lr"] == value


def _raw_tiny(tmp_path, section: str, key: str, value: str) -> Path:
    text = (REPO / "configs" / "raw-tiny.yaml").read_text()
    lines = text.splitlines()
    start = lines.index(f"{section}:")
    for i in range(start + 1, len(lines)):
        if lines[i].startswith(f"  {key}:"):
            lines[i] = f"  {key}: {value}"
            break
    else:
        raise AssertionError(f"{section}.{key} not in raw-tiny.yaml")
    return _config(tmp_path, "\n".join(lines) + "\n")


@pytest.mark.parametrize("section,key,value,message", [
    ("pst", "steps", "true", "valid integer"),
    ("pst", "steps", "'2'", "valid integer"),
    ("pst", "steps", "2.0", "valid integer"),
    ("pst", "lr", "'5e-5'", "valid number"),
    ("pst", "lr", "five", "valid number"),
    ("pst", "use_pooler", "'false'", "valid boolean"),
    ("pst", "use_pooler", "0", "valid boolean"),
    ("pretrain", "seed", "'0'", "valid integer"),
    ("pretrain", "batch_size", "true", "valid integer"),
    ("pretrain", "lr", "'5.0e-4'", "valid number"),
])
def test_strict_types(tmp_path, section, key, value, message):
    cfg = _raw_tiny(tmp_path, section, key, value)
    with pytest.raises(ValueError, match=message) as exc:
        load_config(cfg)
    assert f"{section}.{key}" in str(exc.value) and str(cfg) in str(exc.value)


def test_unquoted_exponent_floats_still_validate(tmp_path):
    cfg = load_config(_raw_tiny(tmp_path, "pst", "lr", "5e-5"))
    assert cfg.pst.lr == 5e-5


@pytest.mark.parametrize("path", sorted(str(p) for p in (REPO / "configs").glob("*.yaml")))
def test_shipped_configs_still_validate(path):
    if "harvest" in Path(path).name:
        load_harvest_config(path)
    elif Path(path).name.startswith("claims-"):
        from defsentflow.claims.load import load_claims

        load_claims(path)
    else:
        load_config(path)
