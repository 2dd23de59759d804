"""One model lookup: catalog ids and aliases, bundled names, folders, cached hub ids; one line otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import yaml

from defsentflow.cli import main
from defsentflow.model.lookup import UnknownModelError, find_model
from defsentflow.storage import Catalog
from tests.cli_output import without_root_line


def _fake_hub_cache(root, repo: str) -> None:
    """The layout huggingface_hub reads: models--org--name/{refs/main, snapshots/<rev>/config.json}."""
    base = root / f"models--{repo.replace('/', '--')}"
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text("abc123")
    (base / "snapshots" / "abc123").mkdir(parents=True)
    (base / "snapshots" / "abc123" / "config.json").write_text("{}")


def test_every_kind_of_name_and_an_unknown_one(home, tiny_bert_dir, tmp_path, monkeypatch):
    cat = Catalog()
    cat.register_model("pst-demo-1", tiny_bert_dir, method="pst")
    cat.execute("INSERT INTO metrics (model_id, task, setting, metric, value) VALUES ('dsp-x', 't', 'all', 'm', 1)")
    cat.execute("INSERT INTO models (model_id, path) VALUES ('dsp-x', ?)", [cat.rel(tiny_bert_dir)])

    assert find_model("pst-demo-1") == find_model("pst-demo-1")
    ref = find_model("pst-demo-1")
    assert (ref.model_id, ref.path, ref.source) == ("pst-demo-1", str(tiny_bert_dir), "catalog")
    assert find_model("dsp-x").path == str(tiny_bert_dir)                      # an alias of the same folder
    assert find_model(str(tiny_bert_dir)).model_id == "pst-demo-1"              # a folder: its catalog id
    assert find_model("minilm").source == "bundled"

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    _fake_hub_cache(tmp_path / "hub", "org/cached-model")
    assert find_model("org/cached-model").source == "hub"
    with pytest.raises(UnknownModelError) as err:
        find_model("minilm-l12")
    assert str(err.value).startswith("unknown model 'minilm-l12': not a catalog id")
    assert "newest ids: dsp-x, pst-demo-1" in str(err.value)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the hub may be asked: an id is taken as given
    assert find_model("org/not-cached").source == "hub"
    with pytest.raises(UnknownModelError, match="model not found"):
        find_model(str(tmp_path / "gone"))


def test_a_typo_in_base_model_fails_at_once_with_one_line_and_no_run(home, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = yaml.safe_load(open("configs/demo.yaml"))
    cfg["pst"]["base_model"] = "minilm-l12"
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    t0 = time.monotonic()
    assert main(["run", str(path)]) == 2
    took = time.monotonic() - t0
    err = without_root_line(capsys.readouterr().err)
    assert err.startswith(f"defsentflow: error: {path}: pst.base_model: unknown model 'minilm-l12'"), err
    assert len(err.splitlines()) == 1 and took < 5, (err, took)
    assert not (home / "catalog.duckdb").exists()  # nothing recorded: no run, no model row
    # from a shell: the check comes before anything loads torch (seconds on a busy machine)
    probe = ("import sys; from defsentflow.cli import main; "
             f"rc = main(['run', {str(path)!r}]); print(rc, 'torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.stdout.splitlines()[-1] == "2 False False", out.stdout + out.stderr
