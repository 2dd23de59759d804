"""Issue 22, fact 8 with the whole pipeline: delete ``catalog.duckdb`` (artifacts and Prefect's
results stay) and ``run`` the same config twice; before, both failed with ``KeyError: "no
dictionary dataset or artifact ..."`` because Prefect's cache reported the dictionary stage done."""

from __future__ import annotations

import json

import pytest
from tiny_pipeline_utils import catalog_rows, final_metrics, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.first(5)]  # started early (tests/conftest.py)


def test_a_run_after_the_catalog_was_deleted_heals_it(tiny_finished_root):
    # a copy of the session's finished tiny run (tests/integration/conftest.py): its artifacts,
    # Prefect's results and catalog as the run left them
    tiny_pipeline, home, expected = tiny_finished_root
    assert final_metrics(home) == expected
    (home / "catalog.duckdb").unlink()
    for _ in range(2):
        again = run_cli(["run", str(tiny_pipeline)], home)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "KeyError" not in again.stderr
        assert final_metrics(home) == expected
    assert catalog_rows(home, "SELECT count(*) FROM dictionaries WHERE name = 'tiny'") == [(1,)]


def test_catalog_rebuild_restores_what_the_finished_run_showed(tiny_finished_root, monkeypatch, capsys):
    """Issue 36: after deleting the catalog of a finished run, `catalog rebuild` gives the same
    `leaderboard --json`, `best-model`, runs page and report tables (was: 2 of 5 models, 35 of 55
    metrics, no run)."""
    from defsentflow.cli import main
    from defsentflow.serve.catalog import ServeCatalog
    from defsentflow.storage import Catalog

    tiny_pipeline, home, _ = tiny_finished_root
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(home))
    tables = ("artifacts", "models", "metrics", "runs", "stages", "pst_steps", "pst_runs", "run_tasks",
              "entry_space_stats", "pst_progress")

    def seen() -> dict:
        out = {}
        for argv in (["leaderboard", "--json"], ["best-model", str(tiny_pipeline)]):
            assert main(argv) == 0
            out[argv[0]] = capsys.readouterr().out
        cat = Catalog(reader=True)
        out.update({t: sorted(map(repr, cat.query(f"SELECT * FROM {t}"))) for t in tables})
        out["runs page"] = ServeCatalog(home).runs()
        return out

    before = seen()
    assert before["runs page"] and before["metrics"]
    assert main(["datasets"]) == 0
    datasets = capsys.readouterr().out
    (home / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    assert main(["catalog", "rebuild"]) == 0
    assert "0 records refused" in capsys.readouterr().out
    assert seen() == before
    # issue 44: the dictionary's rows come back too, so the trained model answers at once (was: "no
    # dictionary dataset 'tiny'" until the next ingest)
    assert main(["datasets"]) == 0
    def counts(table: str) -> list[list[str]]:  # every column but `updated` (the registration's time)
        return [line.split()[:-2] for line in table.splitlines()[2:]]

    assert counts(capsys.readouterr().out) == counts(datasets) and "tiny" in datasets
    model = before["runs page"][0]["selected_model"]
    assert main(["revdict", model, "a small animal", "-k", "3", "--json"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert len(json.loads(out[out.index("["):])[0]["entries"]) == 3  # (after a "data root:" line, if any)
