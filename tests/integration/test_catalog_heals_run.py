"""Issue 22, fact 8 with the whole pipeline: delete ``catalog.duckdb`` (artifacts and Prefect's
results stay) and ``run`` the same config twice; before, both failed with ``KeyError: "no
dictionary dataset or artifact ..."`` because Prefect's cache reported the dictionary stage done."""

from __future__ import annotations

import pytest

from tiny_pipeline_utils import catalog_rows, final_metrics, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.first(5)]  # started early (tests/conftest.py)


def test_a_run_after_the_catalog_was_deleted_heals_it(tiny_pipeline, tmp_path):
    home = tmp_path / "home"
    first = run_cli(["run", str(tiny_pipeline)], home)
    assert first.returncode == 0, first.stderr[-3000:]
    expected = final_metrics(home)
    (home / "catalog.duckdb").unlink()
    for _ in range(2):
        again = run_cli(["run", str(tiny_pipeline)], home)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "KeyError" not in again.stderr
        assert final_metrics(home) == expected
    assert catalog_rows(home, "SELECT count(*) FROM dictionaries WHERE name = 'tiny'") == [(1,)]
