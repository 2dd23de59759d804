from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from defsentflow.storage import atomic_dir, atomic_path, clean_stale_temporaries, write_parquet


def test_write_parquet_roundtrip(tmp_path):
    t = pa.table({"a": [1, 2, 3]})
    out = write_parquet(t, tmp_path / "x" / "t.parquet")
    assert pq.read_table(out).equals(t)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".tmp-")]


def test_failed_write_leaves_no_final_file(tmp_path):
    final = tmp_path / "t.parquet"
    with pytest.raises(RuntimeError):
        with atomic_path(final) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("crash mid-write")
    assert not final.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_dir_replaces_existing(home):
    final = home / "models" / "model"
    with atomic_dir(final) as d:
        (d / "a.txt").write_text("1")
    with atomic_dir(final) as d:
        (d / "b.txt").write_text("2")
    assert sorted(p.name for p in final.iterdir()) == ["b.txt"]


def test_atomic_dir_never_removes_a_foreign_folder(home, tmp_path):
    from defsentflow.storage.outputs import OutputRefusedError

    mine = tmp_path / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "thesis.txt").write_text("years")
    (mine / "sub" / "data.csv").write_text("a,b")
    for target in (mine, home, home.parent):
        with pytest.raises(OutputRefusedError, match="refusing to replace"):
            with atomic_dir(target) as d:
                (d / "x").write_text("1")
    assert (mine / "thesis.txt").read_text() == "years" and (mine / "sub" / "data.csv").read_text() == "a,b"


def test_killed_writer_leaves_only_a_temporary_that_is_cleaned(tmp_path):
    final = tmp_path / "big.bin"
    code = (
        "import os, sys\n"
        "from defsentflow.storage import atomic_path\n"
        f"with atomic_path({str(final)!r}) as tmp:\n"
        "    tmp.write_bytes(b'x' * 1000)\n"
        "    os._exit(9)\n"  # dies like kill -9: no cleanup runs
    )
    subprocess.run([sys.executable, "-c", code], check=False)
    assert not final.exists()
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    assert len(leftovers) == 1
    removed = clean_stale_temporaries(tmp_path)
    assert removed == leftovers and not any(tmp_path.iterdir())


def test_clean_keeps_temporaries_of_live_processes(tmp_path):
    live = tmp_path / f".tmp-{os.getppid()}-abcd-x.parquet"
    live.write_text("in progress")
    assert clean_stale_temporaries(tmp_path) == []
    assert live.exists()
