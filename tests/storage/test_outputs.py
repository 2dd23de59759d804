"""Safe output paths: nothing the command did not write is replaced or removed."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from defsentflow.storage.outputs import (
    OUTPUT_MARKER,
    OutputRefusedError,
    output_dir,
    output_file,
    parquet_output_metadata,
)


def _foreign(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "thesis.txt").write_text("years of work")
    (folder / "sub").mkdir()
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return folder


def _intact(folder):
    assert (folder / "thesis.txt").read_text() == "years of work"
    assert (folder / "sub" / "data.csv").read_text() == "a,b\n1,2\n"


def test_new_folder_gets_marker_and_can_be_replaced(home, tmp_path):
    out = tmp_path / "out"
    with output_dir(out, command="report") as tmp:
        (tmp / "a.md").write_text("one")
    marker = json.loads((out / OUTPUT_MARKER).read_text())
    assert marker["command"] == "report" and marker["created_by"] == "defsentflow" and marker["files"] == ["a.md"]
    with output_dir(out, command="report") as tmp:
        (tmp / "b.md").write_text("two")
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MARKER, "b.md"]


def test_foreign_folder_is_refused_and_intact(home, tmp_path):
    out = _foreign(tmp_path / "mine")
    with pytest.raises(OutputRefusedError, match="not written by defsentflow") as exc:
        with output_dir(out, command="report"):
            pytest.fail("must refuse before yielding")
    assert "\n" not in str(exc.value) and str(out) in str(exc.value)
    _intact(out)


def test_own_folder_with_an_added_user_file_is_refused(home, tmp_path):
    out = tmp_path / "out"
    with output_dir(out, command="report") as tmp:
        (tmp / "a.md").write_text("one")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OutputRefusedError, match="did not write: notes.txt"):
        with output_dir(out, command="report"):
            pass
    assert (out / "notes.txt").read_text() == "mine" and (out / "a.md").exists()


def test_other_commands_output_is_refused(home, tmp_path):
    out = tmp_path / "out"
    with output_dir(out, command="export"):
        pass
    with pytest.raises(OutputRefusedError, match="defsentflow export"):
        with output_dir(out, command="report"):
            pass


@pytest.mark.parametrize("where", ["root", "parent", "inside"])
def test_data_root_and_its_ancestors_and_insides_are_refused(home, where):
    (home / "catalog.duckdb").write_text("precious")
    target = {"root": home, "parent": home.parent, "inside": home / "reports" / "x"}[where]
    with pytest.raises(OutputRefusedError, match="data root"):
        with output_dir(target, command="report"):
            pass
    with pytest.raises(OutputRefusedError, match="data root"):
        with output_file(target / "v.parquet" if where == "inside" else target, command="encode"):
            pass
    assert (home / "catalog.duckdb").read_text() == "precious"


def test_default_location_inside_root_is_allowed(home):
    default = home / "reports" / "r1"
    with output_dir(default, command="report", default=default) as tmp:
        (tmp / "x").write_text("1")
    assert (default / "x").exists()


def test_error_inside_leaves_destination_untouched(home, tmp_path):
    out = tmp_path / "out"
    with output_dir(out, command="report") as tmp:
        (tmp / "a.md").write_text("one")
    with pytest.raises(RuntimeError):
        with output_dir(out, command="report") as tmp:
            (tmp / "half").write_text("x")
            raise RuntimeError("boom")
    assert (out / "a.md").read_text() == "one" and not (out / "half").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "out"]  # no temporary left behind


def test_file_rules(home, tmp_path):
    foreign = tmp_path / "thesis.parquet"
    pq.write_table(pa.table({"x": [1]}), foreign)
    with pytest.raises(OutputRefusedError, match="not an earlier output"):
        with output_file(foreign, command="encode"):
            pass
    assert pq.read_table(foreign).column("x").to_pylist() == [1]
    ours = tmp_path / "v.parquet"
    table = pa.table({"x": [2]}).replace_schema_metadata(parquet_output_metadata("encode"))
    for value in (2, 3):
        with output_file(ours, command="encode") as tmp:
            pq.write_table(table.set_column(0, "x", pa.array([value])), tmp)
    assert pq.read_table(ours).column("x").to_pylist() == [3]
    assert not list(tmp_path.glob(".v.parquet*"))  # metadata-marked Parquet needs no sidecar
    text = tmp_path / "notes.txt"
    text.write_text("mine")
    with pytest.raises(OutputRefusedError):
        with output_file(text, command="export"):
            pass
    assert text.read_text() == "mine"
    csv = tmp_path / "out.csv"
    for body in ("1", "2"):
        with output_file(csv, command="export") as tmp:
            tmp.write_text(body)
    assert csv.read_text() == "2"


def test_symlink_and_wrong_kind_are_refused(home, tmp_path):
    target = _foreign(tmp_path / "mine")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(OutputRefusedError, match="symbolic link"):
        with output_dir(link, command="report"):
            pass
    with pytest.raises(OutputRefusedError, match="not a folder"):
        with output_dir(target / "thesis.txt", command="report"):
            pass
    _intact(target)
