"""``Catalog.session``: one open of the catalog file for a burst of calls, with each call's own
connection and transaction; a read-only session refuses a write; the file is free once it ends."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from defsentflow.storage import Catalog
from defsentflow.storage.catalog import _OPEN, CatalogError


def _instances_started(monkeypatch) -> list[str]:
    """The ``duckdb.connect`` calls made from now on (each one that finds no open instance of its
    file in this process starts one)."""
    calls: list[str] = []
    real = duckdb.connect

    def counting(*args, **kwargs):
        calls.append(str(args[0] if args else kwargs.get("database")))
        return real(*args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counting)
    return calls


def test_calls_inside_a_session_share_its_open_and_keep_their_own_transactions(home, monkeypatch):
    cat = Catalog()
    cat.record_metrics("m1", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 1.0}])
    calls = _instances_started(monkeypatch)
    with cat.session():
        assert _OPEN[str(cat.path)][0] is False  # held for writing
        cat.record_metrics("m2", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 2.0}])
        # a read, and a reader catalog's read, inside a writing session open the held instance
        assert len(cat.query("SELECT * FROM metrics")) == 2
        assert len(Catalog(reader=True).query("SELECT * FROM metrics")) == 2
        with pytest.raises(duckdb.Error):  # a failed transaction rolls back alone
            with cat.transaction() as con:
                con.execute("INSERT INTO metrics (model_id) VALUES ('m3')")
                con.execute("SELECT * FROM no_such_table")
        assert {r["model_id"] for r in cat.query("SELECT model_id FROM metrics")} == {"m1", "m2"}
    # every call reached DuckDB, but all of them inside the session's one open of the file
    assert len(calls) >= 5 and str(cat.path) not in _OPEN
    # the file is free again: another process writes it
    code = ("import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
            "c.execute(\"INSERT INTO metrics (model_id, task, setting, metric, value) "
            "VALUES ('other', 'sts12', 'all', 'spearman', 3.0)\"); c.close()")
    subprocess.run([sys.executable, "-c", code, str(cat.path)], check=True, timeout=60)
    assert {r["model_id"] for r in cat.query("SELECT model_id FROM metrics")} == {"m1", "m2", "other"}


def test_a_read_only_session_refuses_a_write_and_reads_alike(home):
    cat = Catalog()
    cat.record_metrics("m1", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 1.0}])
    with cat.session(read_only=True):
        assert cat.query("SELECT model_id FROM metrics") == [{"model_id": "m1"}]
        assert Catalog(reader=True).query("SELECT count(*) AS n FROM metrics") == [{"n": 1}]
        with pytest.raises(CatalogError, match="a write inside a read-only catalog session"):
            cat.record_metrics("m2", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 2.0}])
    cat.record_metrics("m2", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 2.0}])
    assert len(cat.query("SELECT * FROM metrics")) == 2


def test_a_session_on_a_new_root_creates_the_catalog(home):
    cat = Catalog()
    assert not cat.path.exists()
    with cat.session(read_only=True):  # nothing to read yet: the open creates the schema first
        assert cat.query("SELECT count(*) AS n FROM runs") == [{"n": 0}]
    assert cat.path.is_file()
