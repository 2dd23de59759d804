"""Issue 33: after a pipeline run, ``defsentflow eval MODEL --tasks revdict --revdict-candidates all``
with settings other than the run's leaves every leaderboard value as it was and adds its own
columns; the same command again reuses the finished evaluation."""

from __future__ import annotations

import math

import pytest
from tiny_pipeline_utils import catalog_rows

from defsentflow.cli import main

pytestmark = [pytest.mark.slow]


def _board(home) -> dict[tuple, dict]:
    import duckdb

    con = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
    try:
        cur = con.execute("SELECT * FROM leaderboard")
        cols = [d[0] for d in cur.description]
        return {(r[0], r[1]): dict(zip(cols, r)) for r in cur.fetchall()}
    finally:
        con.close()


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_a_later_eval_with_other_settings_adds_columns_and_changes_none(tiny_finished_root, monkeypatch, capsys):
    _, home, _ = tiny_finished_root
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(home))
    before = _board(home)
    ((run, chosen),) = catalog_rows(home, "SELECT run_id, winner_model_id FROM pst_runs")
    model = f"pst-{run}"  # the run's name for its choice: an alias of the model's own id
    cmd = ["--quiet", "eval", model, "--tasks", "revdict", "--revdict-candidates", "all", "--dictionary", "tiny",
           "--device", "cpu"]
    assert main(cmd) == 0
    after = _board(home)
    for key, row in before.items():   # every existing value unchanged
        assert all(_same(after[key][c], v) for c, v in row.items()), key
    added = set(next(iter(after.values()))) - set(next(iter(before.values())))
    # the run's figures are named for its 50 queries; the command's default 2,000 are another column
    assert {"revdict_test_unseen_cosine_mrr", "revdict_dev_unseen_head_mrr"} <= added
    assert not any(c.startswith("revdict") and "_q50_" not in c for c in next(iter(before.values())))
    (selected,) = [r for (m, _), r in after.items() if m == chosen]  # filed under the model's own id
    assert 0 < selected["revdict_test_unseen_cosine_mrr"] <= 1
    capsys.readouterr()
    assert main(cmd) == 0   # the same evaluation again: reused, not recomputed
    assert "reused the stored figures" in capsys.readouterr().out
    assert _board(home) == after
