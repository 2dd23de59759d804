"""``defsentflow claims`` through the real path on a tiny random model: two seeds, two claims.

The arms run as ordinary pipeline runs (Prefect flows, content-keyed stages), the claims are read
back from the catalog, judged and recorded; a second call runs nothing (every arm completed) and
records the same figures under a new claims run. The figures of a random 32-wide model mean
nothing; the test checks the path, the rows and their consistency with the PST records.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from tiny_pipeline_utils import catalog_rows, cli_here

from tests.golden import expect_figure

pytestmark = [pytest.mark.slow, pytest.mark.first(6)]  # started early (tests/conftest.py)


def test_claims_run_records_the_table(tiny_pipeline: Path, tmp_path):
    home = tmp_path / "home"
    claims = tmp_path / "claims-tiny.yaml"
    claims.write_text(yaml.safe_dump({
        "name": "claims-tiny", "base": str(tiny_pipeline), "seeds": [0, 1], "steps": 2,
        "claims": ["later_steps_beat_step_1", "entry_space_more_isotropic"]}))
    t0 = time.perf_counter()
    first = cli_here(["claims", str(claims)], home)  # in this process: the subject is the claims path, not a process
    assert first.returncode == 0, first.stderr[-3000:]
    assert "last step beats step 1" in first.stdout and "claims run" in first.stdout
    print(f"\ntiny claims run: {time.perf_counter() - t0:.0f}s")

    rows = catalog_rows(home, "SELECT claim, n, series, verdict, arms, claims_run_id FROM claims ORDER BY position")
    assert [r[0] for r in rows] == ["later_steps_beat_step_1", "entry_space_more_isotropic"]
    later = rows[0]
    assert later[1] == 2 and later[3] != "not measured"
    arms = json.loads(later[4])
    assert set(arms) == {"pst seed=0", "pst seed=1"}
    # the step-1 series is exactly PST's recorded best step-1 score of each seed's run
    step1 = json.loads(later[2])[0]
    for seed, value in zip(step1["seeds"], step1["values"]):
        recorded = catalog_rows(home, "SELECT max(selection_score) FROM pst_steps WHERE run_id = ? AND step = 1",
                                [arms[f"pst seed={seed}"]])[0][0]
        assert value == pytest.approx(recorded)
    # the tiny run's figures are golden (tests/golden/figures.yaml): each arm's mean over the two seeds
    iso = json.loads(rows[1][2])
    print("\ntiny claims figures:", [(x["label"], x["mean"]) for x in json.loads(later[2]) + iso])
    expect_figure("claims_tiny.step_1_revdict_dev_mrr", json.loads(later[2])[0]["mean"])
    expect_figure("claims_tiny.step_2_revdict_dev_mrr", json.loads(later[2])[1]["mean"])
    expect_figure("claims_tiny.step_1_isoscore", iso[0]["mean"])
    expect_figure("claims_tiny.step_2_isoscore", iso[1]["mean"])
    report = Path(home / "reports" / later[5] / "report.md").read_text()
    assert "## Claims" in report and "img/claims.png" in report

    again = cli_here(["claims", str(claims)], home)
    assert again.returncode == 0, again.stderr[-3000:]
    runs = catalog_rows(home, "SELECT count(*) FROM runs WHERE flow = 'pipeline'")[0][0]
    assert runs == 2  # nothing rerun: both arms had completed
    latest = catalog_rows(home, "SELECT claims_run_id, series FROM claims WHERE latest ORDER BY position")
    assert latest[0][0] != later[5] and json.loads(latest[0][1]) == json.loads(later[2])
    shown = cli_here(["claims", str(claims), "--show"], home)
    assert shown.returncode == 0 and "entry space grows more isotropic" in shown.stdout
