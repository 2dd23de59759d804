"""A later PST step's plan: its rate after a step-1 rate grid (Appendix A) and its combination grid (Table 3)."""

from __future__ import annotations

import pytest

from defsentflow.training.pst_config import DEFAULT_GRID, PstSection
from defsentflow.training.pst_records import Candidate, StepResult
from defsentflow.training.step_plan import plan_step


def _step(step: int, lr: float, pooling: str = "cls", encoding: str = "ac") -> StepResult:
    best = Candidate(step=step, seed=0, pooling=pooling, entry_encoding=encoding, lr=lr, model_id=f"m{step}",
                     model_dir=f"/m{step}", artifact_key=f"k{step}", use_pooler=True, score=0.5, lr_searched=True)
    return StepResult(step=step, candidates=(best,), best=best, lr=lr, figure=0.5)


def test_a_later_step_never_trains_above_the_rate_step_1_chose():
    """BERT-large's Table 5 rates (4e-5, 4e-5, 3e-5) with step 1 searched in {5e-5, 4e-5, 3e-5} (Appendix A): a
    step 1 that chose 3e-5 must not be followed by a step 2 at 4e-5; one that chose 5e-5 keeps Table 5's."""
    pst = PstSection(base_model="minilm", steps=3, seeds=[0], lr_per_step=[4e-5, 4e-5, 3e-5],
                     step1_lr_grid=[5e-5, 4e-5, 3e-5])
    base = _step(0, None)  # type: ignore[arg-type]
    low = plan_step(pst, 2, [base, _step(1, 3e-5)])
    assert low.lr == 3e-5 and low.rates == (3e-5,)
    high = plan_step(pst, 2, [base, _step(1, 5e-5)])
    assert high.lr == 4e-5
    assert plan_step(pst, 3, [base, _step(1, 5e-5), _step(2, 4e-5)]).lr == 3e-5


def test_a_regrid_step_searches_the_combinations_again():
    """SNCSE-RoBERTa-large in Table 3: (CLS, AC) at the 1st step, (Mean, AC) at the 2nd; without regrid_steps a
    later step keeps the previous step's combination."""
    history = [_step(0, None), _step(1, 3e-5, "cls", "ac")]  # type: ignore[arg-type]
    keep = PstSection(base_model="minilm", steps=2, seeds=[0])
    assert [(g.pooling, g.entry_encoding) for g in plan_step(keep, 2, history).grid] == [("cls", "ac")]
    regrid = PstSection(base_model="minilm", steps=2, seeds=[0], regrid_steps=[2])
    assert plan_step(regrid, 2, history).grid == DEFAULT_GRID
    with pytest.raises(ValueError, match="regrid_steps are step numbers from 2"):
        PstSection(base_model="minilm", steps=2, regrid_steps=[1])
    with pytest.raises(ValueError, match="past the last step"):
        PstSection(base_model="minilm", steps=2, regrid_steps=[3])
