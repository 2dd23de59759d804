"""Issue 36, fact 3: a command touches only what it made. Files carrying the project's own temporary
and marker names, planted in user folders, survive; forged markers vouch for nothing; a folder of any
data root is never an output; a killed write's leftover is removed by the next write to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from defsentflow.cli import main
from defsentflow.storage import Catalog, clean_stale_temporaries, hash_path
from defsentflow.storage.atomic import atomic_dir
from defsentflow.storage.manifest import quick_check
from defsentflow.storage.outputs import OUTPUT_MARKER, OutputRefusedError, output_dir, output_file
from defsentflow.storage.records import make_record, read_record, settle_record


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _user_files(folder: Path, dead: int) -> dict[Path, str]:
    """Files a user may well have, named like the project's temporaries and markers."""
    files = {folder / ".tmp-notes.txt": "notes", folder / ".tmp-draft" / "chapter.md": "draft",
             folder / f".tmp-{dead}-draft.txt": "not hex", folder / f".tmp-{dead}-abcdefgh-x": "not hex either",
             folder / "sub" / f".tmp-{dead}-0123abcd-mine": "a user's file in a user's folder",
             folder / "thesis.txt": "years of work"}
    for p, text in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return files


def _intact(files: dict[Path, str]) -> None:
    for p, text in files.items():
        assert p.read_text() == text, p


def test_temporary_clean_up_removes_only_its_own_pattern_in_its_own_folders(home):
    dead = _dead_pid()
    user = _user_files(home, dead) | _user_files(home / "notes", dead)  # a root that is also a working folder
    ours = [home / "models" / f".tmp-{dead}-0123abcd-m1", home / f".tmp-{dead}-89abcdef-catalog.json",
            home / "parquet" / "x" / f".tmp-{dead}-00ff00ff-t.parquet"]
    live = home / "models" / f".tmp-{os.getppid()}-0123abcd-busy"
    for p in [*ours, live]:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("half written")
    (home / "catalog.duckdb").touch()
    assert sorted(clean_stale_temporaries(home)) == sorted(ours)
    _intact(user)
    assert live.exists()


def test_forged_or_partial_markers_vouch_for_nothing(home, tmp_path):
    dead = _dead_pid()
    out = tmp_path / "out"
    user = _user_files(out, dead)
    for marker in ({"command": "report", "created_by": "defsentflow"},  # no list of files
                   {"command": "report", "created_by": "defsentflow", "files": ["thesis.txt"]},  # not all of them
                   {"command": "report", "created_by": "defsentflow", "files": "*"}):
        (out / OUTPUT_MARKER).write_text(json.dumps(marker))
        with pytest.raises(OutputRefusedError, match="not written by defsentflow|did not write"):
            with output_dir(out, command="report"):
                pytest.fail("must refuse before yielding")
        with pytest.raises(OutputRefusedError):
            with atomic_dir(out):  # the library's artifact writer, outside the data root
                pytest.fail("must refuse before yielding")
        _intact(user)
    text = tmp_path / "notes.csv"
    text.write_text("mine")
    (tmp_path / f".notes.csv{OUTPUT_MARKER}").write_text(json.dumps({"command": "export", "created_by": "defsentflow",
                                                                       "files": ["notes.csv"], "sha": "0" * 32}))
    with pytest.raises(OutputRefusedError, match="not an earlier output"):
        with output_file(text, command="export"):
            pass
    assert text.read_text() == "mine"
    ours = tmp_path / "ours.csv"
    for body in ("1", "2"):
        with output_file(ours, command="export") as tmp:
            tmp.write_text(body)
    ours.write_text("edited by hand")  # no longer what the command wrote
    with pytest.raises(OutputRefusedError, match="changed since"):
        with output_file(ours, command="export"):
            pass


def test_a_folder_of_any_data_root_is_never_an_output(home, tmp_path, capsys):
    other = tmp_path / "other-root"
    report = other / "reports" / "r1"
    report.mkdir(parents=True)
    (report / "report.html").write_text("theirs")
    Catalog(other).register_artifact("report-r1", "report", report, hash_path(report), run_id="r1")
    record = read_record(report)
    with pytest.raises(OutputRefusedError, match="inside the data root"):
        with output_dir(report, command="report"):
            pass
    loose = tmp_path / "loose"  # a folder copied out of a root, records and all
    loose.mkdir()
    (loose / ".defsentflow-record.json").write_text(json.dumps(record))
    with pytest.raises(OutputRefusedError, match="holds artifact records"):
        with output_dir(loose, command="report"):
            pass
    Catalog().start_run("pipeline", run_id="r1")
    Catalog().end_run("r1", "completed", flow="pipeline")
    assert main(["report", "r1", "--out", str(report)]) == 2
    assert "inside the data root" in capsys.readouterr().err
    assert read_record(report) == record and (report / "report.html").read_text() == "theirs"


def test_a_killed_writes_leftover_is_removed_by_the_next_write(home, tmp_path):
    dead = _dead_pid()
    out = tmp_path / "export"
    leftover = tmp_path / f".tmp-{dead}-0a1b2c3d-export"  # what a killed `export model` left
    (leftover / "model.safetensors").parent.mkdir(parents=True)
    (leftover / "model.safetensors").write_bytes(b"x" * 1000)
    live = tmp_path / f".tmp-{os.getppid()}-0a1b2c3d-export"  # another process still writing
    live.mkdir()
    user = _user_files(tmp_path / "beside", dead)
    other = tmp_path / f".tmp-{dead}-0a1b2c3d-export-old"  # another destination's
    other.mkdir()
    with output_dir(out, command="export") as tmp:
        (tmp / "a.txt").write_text("new")
    assert not leftover.exists() and live.exists() and other.exists()
    _intact(user)


def test_a_record_always_describes_the_files_it_lies_beside(home):
    """Two runs writing one artifact at once: the record written last is checked against the files on
    disk and taken again when the other run replaced them meanwhile (was: content of one run, record of
    the other, in 1 of 2 trials)."""
    step = home / "pst" / "steps" / ("c" * 32 + ".json")
    step.parent.mkdir(parents=True)
    step.write_text('{"run": "A"}')
    stale = make_record(home, key="c" * 32, kind="pst_step", path=step, content_hash=hash_path(step), run_id="A")
    step.write_text('{"run": "B", "more": 1}')  # the other run's rename lands before our record
    written = settle_record(step, stale)
    assert quick_check(step, read_record(step)["manifest"]) is None
    assert written["manifest"] == read_record(step)["manifest"]
