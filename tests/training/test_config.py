"""TrainConfig validation and the papers' settings."""

from __future__ import annotations

import pytest

from defsentflow.training import TrainConfig, paper_config


def test_wrong_choices_name_the_valid_ones():
    with pytest.raises(ValueError, match=r"method\n  Input should be 'defsent' or 'defsent_plus'"):
        TrainConfig(method="defsent++")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"pooling\n  Input should be 'cls', 'mean' or 'max'"):
        TrainConfig(pooling="prompt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        TrainConfig(batch_size=0)
    with pytest.raises(ValueError, match="warmup_ratio"):
        TrainConfig(warmup_ratio=1.5)


def test_paper_settings():
    ds = paper_config("defsent")
    assert (ds.batch_size, ds.warmup_ratio, ds.grad_clip, ds.resolved_lr_decay) == (16, 0.1, None, "none")
    a = paper_config("defsent_plus", variant="a")
    b = paper_config("defsent_plus", variant="b", lr=1e-5)
    assert (a.batch_size, a.warmup_ratio, a.grad_clip, a.resolved_lr_decay) == (32, 0.0, 1.0, "linear")
    assert b.batch_size == 16 and b.lr == 1e-5
    assert paper_config("defsent_plus", variant="c").batch_size == 16  # Liu 2024, Sec. 4.1: 16 for b and c
    assert paper_config("defsent_plus").batch_size == 32  # an unknown variant counts as dataset a
