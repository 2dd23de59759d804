"""``defsentflow best-model CONFIG [--stage pretrain]`` after a pipeline run that pretrains its encoder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.integration.tiny_pipeline_utils import cli_here, write_tiny_dictionary
from tests.training.test_pretrain import _section, _write_corpus


def _config(tmp_path: Path, tokenizer: Path, name: str, training: dict) -> Path:
    """A pipeline that pretrains a tiny raw encoder on a toy corpus, then trains from it (pst_from: pretrain)."""
    # (No '-' in the text: the tiny fixture tokenizer maps it to an id one past its vocabulary.)
    _write_corpus(tmp_path, title=f"Animals for {name.replace('-', ' ')}")
    dictionary = write_tiny_dictionary(tmp_path / "tiny-dict.jsonl")
    pretrain = _section(tmp_path, tokenizer, name=name, dictionary=None, epochs=1).model_dump(mode="json")
    common = {"base_model": "minilm", "dictionary": "tiny", "use_pooler": False, "batch_size": 8, "max_length": 32,
              "device": "cpu"}
    cfg = {
        "name": name,
        "dictionary": {"name": "tiny", "sources": [{"kind": "jsonl", "paths": [str(dictionary)]}]},
        "harvest": None,
        "pretrain": pretrain,
        "pst_from": "pretrain",
        **{k: {**common, **v} for k, v in training.items()},
        "eval": {"tasks": ["revdict"], "data_dir": None, "baselines": ["untrained"], "revdict_max_queries": 50},
        "report": False,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _best_model(*args: str) -> tuple[int, str, str]:
    """``defsentflow best-model ARGS`` in this process: exit code, stdout, stderr."""
    res = cli_here(["best-model", *args])
    return res.returncode, res.stdout.strip(), res.stderr


def test_best_model_prints_the_trained_and_the_pretrained_encoder(prefect_test_harness, home, tmp_path, tiny_mlm_dir):
    from defsentflow.encoders import has_mlm_head
    from defsentflow.flows.pipeline import pipeline

    pst = {"pst": {"steps": 1, "seeds": [0], "grid": [{"pooling": "mean", "entry_encoding": "amp"}], "lr": 1e-3,
                   "selection": "revdict-mrr", "selection_max_queries": 50, "data_dir": None}}
    (tmp_path / "pst").mkdir()
    cfg = _config(tmp_path / "pst", tiny_mlm_dir, "bm-pst", pst)
    rc, _, err = _best_model(str(cfg))
    assert rc == 2 and "no completed run of config 'bm-pst'" in err  # nothing run yet: a clear error

    result = pipeline(str(cfg))
    assert result["status"] == "completed"
    rc, trained, _ = _best_model(str(cfg))
    assert rc == 0 and trained == result["selected"]["model_dir"]
    rc, raw, _ = _best_model(str(cfg), "--stage", "pretrain")
    assert rc == 0 and Path(raw).parent == home.resolve() / "models" / "pretrain" and has_mlm_head(raw)
    assert json.loads((Path(raw) / "defsentflow.json").read_text())["method"] == "pretrain"
    # PST started from the pretrained encoder: its step-0 candidate is that directory.
    from defsentflow.storage import Catalog

    base = Catalog().query("SELECT base_model FROM pst_runs WHERE run_id = ?", [result["run_id"]])[0]["base_model"]
    assert Path(base) == Path(raw)
    rc, _, err = _best_model(str(cfg), "--stage", "surrogate")
    assert rc == 2 and "has a surrogate model" in err

    # Another config with the same pretrain: section reuses the (content-addressed) raw encoder;
    # both configs still name it, and each its own trained encoder.
    other = cfg.with_name("bm-pst-other.yaml")
    data = yaml.safe_load(cfg.read_text())
    data["name"], data["pst"]["lr"] = "bm-pst-other", 5e-4
    other.write_text(yaml.safe_dump(data, sort_keys=False))
    second = pipeline(str(other))
    assert second["run_id"] != result["run_id"]
    assert _best_model(str(other), "--stage", "pretrain")[1] == raw
    assert _best_model(str(cfg), "--stage", "pretrain")[1] == raw
    assert _best_model(str(cfg))[1] == trained and _best_model(str(other))[1] == second["selected"]["model_dir"]


def test_best_model_of_a_defsent_config(prefect_test_harness, home, tmp_path, tiny_mlm_dir):
    from defsentflow.flows.pipeline import pipeline

    (tmp_path / "ds").mkdir()
    ds = {"defsent": {"method": "defsent_plus", "pooling": "mean", "entry_encoding": "amp", "lr": 1e-3}}
    cfg = _config(tmp_path / "ds", tiny_mlm_dir, "bm-defsent", ds)
    result = pipeline(str(cfg))
    rc, trained, _ = _best_model(str(cfg))
    assert rc == 0 and trained == result["selected"]["model_dir"]
    assert json.loads((Path(trained) / "defsentflow.json").read_text())["method"] == "defsent_plus"
    # the run leaves the selected model's reverse-dictionary index, which `defsentflow serve` serves
    from defsentflow.serve.catalog import ServeCatalog

    served = [i.path for i in ServeCatalog().indexes()]
    assert served and all((Path(p) / "index.faiss").is_file() for p in served)
    rc, raw, _ = _best_model(str(cfg), "--stage", "pretrain")
    assert rc == 0 and raw != trained and Path(raw).parent.name == "pretrain"


def test_unknown_stage_is_rejected(tmp_path):
    from defsentflow.pipeline import selected_model_dir

    with pytest.raises(ValueError, match="stage must be one of"):
        selected_model_dir(tmp_path / "x.yaml", stage="nope")
