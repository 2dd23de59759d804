"""Row records: the catalog's run and model rows kept on disk by the Catalog, read back as input."""

from __future__ import annotations

import json
import re

import pytest

from defsentflow.storage import Catalog
from defsentflow.storage.record_checks import RecordError
from defsentflow.storage.row_records import column_types, load_row_record, root_id, row_record_path


def _load(home, kind, ident):
    with Catalog().connect(read_only=True) as con:
        types = column_types(con)
    return load_row_record(home, row_record_path(home, kind, ident), kind, expected_root=root_id(home, create=False),
                           types=types)


def test_every_write_keeps_the_rows_it_touched(home):
    cat = Catalog()
    cat.start_run("pipeline", config={"name": "x"}, run_id="r1")
    cat.execute("INSERT INTO pst_steps (run_id, step, model_id, chosen) VALUES ('r1', 1, 'm', true)")  # a direct write
    cat.record_stage("r1", "pst-step-1", "completed", seconds=0.5)  # keeps runs and stages only
    rec = _load(home, "run", "r1")
    assert set(rec.tables) == {"runs", "stages"}
    cat.end_run("r1", "completed", flow="pipeline")  # the end of a run keeps every table
    rec = _load(home, "run", "r1")
    assert set(rec.tables) == {"runs", "stages", "pst_steps"}
    cols, rows = rec.tables["runs"]
    assert dict(zip(cols, rows[0]))["status"] == "completed"
    cat.record_metrics("base:x", [{"task": "t", "setting": "s", "metric": "m", "value": 0.5}], run_id="r1")
    assert row_record_path(home, "model", "base:x").name.startswith("base_x-")
    assert _load(home, "model", "base:x").tables["metrics"][1][0][4] == 0.5


@pytest.mark.parametrize(("change", "reason"), [
    (lambda d: d["tables"]["runs"]["columns"].__setitem__(0, "run_idx"), "unknown column 'run_idx'"),
    (lambda d: d["tables"]["runs"]["rows"][0].__setitem__(0, "r2"), "a row of 'r2', not of 'r1'"),
    (lambda d: d.__setitem__("id", "r2"), "which are kept in r2.json"),
    (lambda d: d["tables"].__setitem__("models", d["tables"]["runs"]), "holds no 'models' rows"),
    (lambda d: d["tables"].__setitem__("runs", {"columns": ["run_id", "flow"], "rows": [["r1", 7]]}),
     "flow is not a VARCHAR (required)"),
    (lambda d: d["tables"].__setitem__("runs", {"columns": ["run_id", "flow", "started_at"], "rows": [["r1", "x", "noon"]]}),
     "started_at is not a TIMESTAMP"),
    (lambda d: d.__setitem__("root_id", "0" * 32), "written in another data root"),
])
def test_a_row_record_is_checked_before_a_row_is_trusted(home, change, reason):
    Catalog().start_run("pipeline", config={"name": "x"}, run_id="r1")
    path = row_record_path(home, "run", "r1")
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=re.escape(reason)):
        _load(home, "run", "r1")
