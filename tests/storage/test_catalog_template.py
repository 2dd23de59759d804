"""A new catalog is a copy of the process's template (defsentflow/storage/catalog_template.py): the
same schema as one migrated in place, never over a catalog that is there, nothing left behind."""

from __future__ import annotations

import shutil

import duckdb
import pytest

import defsentflow.storage.catalog as catalog_module
from defsentflow.storage import Catalog, sql_dir
from defsentflow.storage.catalog import STORAGE_COMPATIBILITY
from defsentflow.storage.catalog_template import create_catalog_file
from defsentflow.storage.swap import TMP_PREFIX


def _schema(path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            "tables": con.execute("SELECT table_name, sql FROM duckdb_tables() ORDER BY 1").fetchall(),
            "views": con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall(),
            "macros": con.execute("SELECT DISTINCT function_name FROM duckdb_functions() "
                                  "WHERE function_type LIKE '%macro%' AND NOT internal ORDER BY 1").fetchall(),
            "applied": con.execute("SELECT file, sha FROM schema_version ORDER BY 1").fetchall(),
            "registry": con.execute("SELECT * FROM eval_task_registry ORDER BY ALL").fetchall(),
        }
    finally:
        con.close()


def test_a_copied_catalog_has_the_schema_of_one_migrated_in_place(tmp_path, monkeypatch):
    copied = Catalog(tmp_path / "copied")
    copied.start_run("x", run_id="r1")
    monkeypatch.setattr(catalog_module, "create_catalog_file", lambda path, version: False)  # no template
    in_place = Catalog(tmp_path / "in-place")
    in_place.start_run("x", run_id="r1")
    a, b = _schema(copied.path), _schema(in_place.path)
    assert a == b
    assert len(a["applied"]) >= 20 and any(name == "leaderboard" for name, _ in a["views"])
    # each root keeps its own identity and rows; no copy is left beside the catalog
    assert copied.query("SELECT run_id FROM runs") == [{"run_id": "r1"}]
    assert not [p.name for p in (tmp_path / "copied").iterdir() if p.name.startswith(TMP_PREFIX)]
    # readable as a file DuckDB creates is (the umask's mode, not a private temporary file's 0o600)
    assert copied.path.stat().st_mode & 0o777 == in_place.path.stat().st_mode & 0o777


def test_a_catalog_that_is_there_is_never_replaced(tmp_path):
    cat = Catalog(tmp_path / "root")
    cat.start_run("x", run_id="r1")
    before = cat.path.read_bytes()
    assert create_catalog_file(cat.path, STORAGE_COMPATIBILITY) is False
    assert cat.path.read_bytes() == before
    assert cat.query("SELECT run_id FROM runs") == [{"run_id": "r1"}]
    assert sorted(p.name for p in cat.path.parent.glob(f"{TMP_PREFIX}*")) == []


def test_a_directory_that_cannot_take_the_copy_is_left_as_it_was(tmp_path, monkeypatch):
    target = tmp_path / "gone" / "catalog.duckdb"  # its directory is missing: the copy cannot be written
    assert create_catalog_file(target, STORAGE_COMPATIBILITY) is False
    assert not target.parent.exists()
    monkeypatch.setattr("os.link", lambda *a, **k: (_ for _ in ()).throw(OSError("no hard links here")))
    (tmp_path / "nolinks").mkdir()
    assert create_catalog_file(tmp_path / "nolinks" / "catalog.duckdb", STORAGE_COMPATIBILITY) is False
    assert list((tmp_path / "nolinks").iterdir()) == []  # the copy written beside it is removed


def test_a_changed_ddl_file_builds_a_new_template(tmp_path, monkeypatch):
    Catalog(tmp_path / "before").query("SELECT 1")
    ddl = tmp_path / "sql"
    shutil.copytree(sql_dir(), ddl)
    (ddl / "900_extra.sql").write_text("CREATE TABLE IF NOT EXISTS extra_table (a INTEGER);\n")
    monkeypatch.setenv("DEFSENTFLOW_SQL_DIR", str(ddl))
    cat = Catalog(tmp_path / "after")
    assert cat.query("SELECT count(*) AS n FROM extra_table") == [{"n": 0}]
    assert ("900_extra.sql",) in [(f,) for f, _ in _schema(cat.path)["applied"]]


def test_a_worker_never_creates_a_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("DEFSENTFLOW_WORKER", "1")
    with pytest.raises(catalog_module.CatalogAccessError):
        Catalog(tmp_path / "root").query("SELECT 1")
    assert not (tmp_path / "root" / "catalog.duckdb").exists()
