"""Every shipped config validates: pipeline configs as a whole, training configs section by section."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from defsentflow.config import load_section
from defsentflow.training.pst_config import DefSentSection, PstSection

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
REQUIRED = ("demo.yaml", "minilm-wordnet.yaml", "bert-base-defsent-plus.yaml", "roberta-base-defsent-plus.yaml",
            "bert-base-defsent.yaml")


def test_the_named_configs_exist():
    assert not [n for n in REQUIRED if not (CONFIGS / n).is_file()]


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_config_validates(path):
    raw = yaml.safe_load(path.read_text())
    assert isinstance(raw, dict), f"{path}: not a mapping"
    if "claims" in raw:  # a claims file: its base config and every arm it derives
        from defsentflow.claims.load import load_claims

        load_claims(path)
    elif "pst" in raw:  # a pipeline config
        from defsentflow.config import load_config

        cfg = load_config(path)
        assert isinstance(load_section(path, "pst"), PstSection)
        lrs = [cfg.pst.lr_for_step(k) for k in range(1, cfg.pst.total_steps + 1)]
        assert lrs == sorted(lrs, reverse=True)
    elif "defsent" in raw:  # a training config: its sections one by one
        from defsentflow.dictionary.config import DictionaryConfig

        assert isinstance(load_section(path, "defsent"), DefSentSection)
        assert DictionaryConfig.model_validate(raw["dictionary"]).name == raw["defsent"]["dictionary"]
    elif "corpus" in raw:  # a harvest config
        from defsentflow.scoring.config import HarvestConfig

        HarvestConfig.model_validate(raw)
    else:
        pytest.fail(f"{path.name}: not a pipeline, training, harvest or claims config")


def test_demo_is_small():
    s = load_section(CONFIGS / "demo.yaml", "pst")
    assert s.base_model == "minilm" and s.dictionary == "sample"
    assert s.seeds == [0] and s.steps == 2 and len(s.grid) == 1
