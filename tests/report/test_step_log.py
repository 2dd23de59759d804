"""A PST step in the run's log: its figure, every candidate's score and its losses."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

from defsentflow.report.step_log import log_step, loss_summary


def test_loss_summary_spans_first_to_last():
    assert loss_summary([2.0, 1.5, 1.2, 1.1], points=3) == "2.000 1.200 1.100 (4 steps; min 1.100)"
    assert loss_summary(list(range(100, 0, -1)), points=5).startswith("100.000 75.000 50.000 26.000 1.000 (100 steps")
    assert loss_summary([]) == "no losses recorded"


def test_every_candidate_and_the_step_figure_are_logged(tmp_path, caplog):
    folder = tmp_path / "m1"
    folder.mkdir()
    (folder / "defsentflow.json").write_text(json.dumps({"losses": [3.0, 2.0, 1.0]}))
    cand = lambda seed, score, d: SimpleNamespace(step=1, group="mean-amp", seed=seed, score=score,  # noqa: E731
                                                 model_id=f"dsp-{seed}", model_dir=str(d), metric="stsb-dev")
    best = cand(0, 80.25, folder)
    step = SimpleNamespace(step=1, cached=False, seconds=12.5, best=best, figure=80.25, rule="best_seed",
                           group_means={}, candidates=(best, cand(1, 79.5, tmp_path / "gone")))
    with caplog.at_level(logging.INFO, logger="defsentflow.pst"):
        log_step(step)
    lines = [(r.getMessage(), getattr(r, "terminal", True)) for r in caplog.records]
    assert lines[0] == ("PST step 1 (12.5 s): stsb-dev 80.2500 (best_seed), chosen dsp-0", True)
    assert lines[1] == ("  step 1 mean-amp seed 0: stsb-dev 80.2500; dsp-0; loss 3.000 2.000 1.000 (3 steps; min 1.000)",
                        False)  # the log file only
    assert lines[2] == ("  step 1 mean-amp seed 1: stsb-dev 79.5000; dsp-1", False)
