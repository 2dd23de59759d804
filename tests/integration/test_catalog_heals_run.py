"""Issue 22, fact 8 with the whole pipeline: delete ``catalog.duckdb`` (artifacts and Prefect's
results stay) and ``run`` the same config twice; before, both failed with ``KeyError: "no
dictionary dataset or artifact ..."`` because Prefect's cache reported the dictionary stage done."""

from __future__ import annotations

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
