"""``autocast: bf16`` (the setting a GPU user turns on) runs the whole pipeline, PST's selection
included, and recomputes what the fp32 run computed: selection figures are registry evaluations,
keyed by every setting that changes them (issue 41, item 2)."""

from __future__ import annotations

import pytest
from tiny_pipeline_utils import catalog_rows, cli_here

pytestmark = [pytest.mark.slow]


def test_bf16_recomputes_step_0_and_completes(tiny_finished_root):
    config, home, _ = tiny_finished_root
    # one PST step is enough: step 0 (the same untrained model) is what a bf16 run must not reuse
    res = cli_here(["run", str(config), "--set", "pst.autocast=bf16", "--set", "pst.steps=1"], home)  # in this process
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    runs = catalog_rows(home, "SELECT run_id, selection_column, winner_model_id FROM pst_runs ORDER BY created_at")
    (fp32_run, fp32_column, _), (bf16_run, bf16_column, _) = runs
    assert "bf16" in bf16_column and "bf16" not in fp32_column  # the leaderboard's selection column: the registry's
    step0 = catalog_rows(home, "SELECT run_id, model_id, selection_score FROM pst_steps WHERE step = 0 ORDER BY run_id")
    scores = {r[0]: r[2] for r in step0}
    assert {r[1] for r in step0} == {step0[0][1]}  # the untrained model, one id in both runs
    # step 0 is the same model: its bf16 figure is recomputed under its own name, beside the fp32 one
    figures = dict(catalog_rows(home, "SELECT task, value FROM metrics WHERE model_id = ? AND metric = 'mrr' "
                                      "AND task LIKE 'revdict-dev%'", [step0[0][1]]))
    bf16 = [t for t in figures if t.endswith("+bf16")]
    assert len(bf16) == 1 and bf16[0].removesuffix("+bf16") in figures
    assert figures[bf16[0]] == pytest.approx(scores[bf16_run]) and figures[bf16[0].removesuffix("+bf16")] == pytest.approx(scores[fp32_run])
    assert abs(scores[bf16_run] - scores[fp32_run]) < 0.1  # bf16 rounding, not another figure
    stored = catalog_rows(home, "SELECT count(*) FROM artifacts WHERE kind = 'evaluation' AND run_id = ?", [bf16_run])
    assert stored[0][0] >= 1  # in the one evaluation store (cache/evaluations)
