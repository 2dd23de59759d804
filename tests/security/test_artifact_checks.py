"""A cached artifact is checked against its manifest before reuse; `defsentflow verify` re-hashes."""

from __future__ import annotations

import logging

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from defsentflow.cli import main
from defsentflow.dictionary.config import DictionaryConfig, SourceSpec
from defsentflow.dictionary.ingest import ingest_dictionary
from defsentflow.dictionary.store import load_dictionary
from defsentflow.storage import Catalog, hash_path


@pytest.fixture()
def sample(home, tmp_path):
    src = tmp_path / "d.tsv"
    src.write_text("".join(f"word{i}\ta thing numbered {i} in the list\n" for i in range(60)))
    cfg = DictionaryConfig(name="tiny", sources=(SourceSpec(kind="tsv", paths=(str(src),)),))
    first = ingest_dictionary(cfg)
    assert first.status == "built"
    return cfg, first.path


def _rewrite_definitions(path):
    t = pq.read_table(path / "definitions.parquet")
    t = t.set_column(t.column_names.index("definition"), "definition", pc.utf8_upper(t["definition"]))
    pq.write_table(t, path / "definitions.parquet", compression="zstd")


def test_rewritten_parquet_is_recomputed_not_unchanged(sample, caplog):
    cfg, path = sample
    _rewrite_definitions(path)
    with caplog.at_level(logging.WARNING):
        again = ingest_dictionary(cfg)
    assert again.status == "built"
    assert "does not match its record" in caplog.text
    assert len(list(path.parent.glob(".changed-*"))) == 1  # the changed files, kept aside for inspection
    assert all(d == d.lower() for d in load_dictionary("tiny")["definition"].to_pylist())
    assert ingest_dictionary(cfg).status == "unchanged"  # the rebuilt artifact is trusted again


def test_later_stages_refuse_a_changed_dictionary(sample):
    _, path = sample
    _rewrite_definitions(path)
    with pytest.raises(KeyError, match="missing or changed"):
        load_dictionary("tiny")
    with pytest.raises(KeyError):
        load_dictionary("tiny")  # moved aside: still refused, never read


@pytest.mark.parametrize("tamper", ["same_size_middle", "truncate", "append", "delete", "extra_file"])
def test_verify_reports_every_kind_of_change(sample, capsys, tamper):
    _, path = sample
    f = path / "definitions.parquet"
    data = bytearray(f.read_bytes())
    if tamper == "same_size_middle":  # same size, same footer (a small file's quick hash is its full hash)
        data[len(data) // 2] ^= 0xFF
        f.write_bytes(bytes(data))
    elif tamper == "truncate":
        f.write_bytes(bytes(data[:-10]))
    elif tamper == "append":
        f.write_bytes(bytes(data) + b"\0")
    elif tamper == "delete":
        (path / "examples.parquet").unlink()
    else:
        (path / "evil.parquet").write_bytes(b"PAR1")
    rc = main(["verify"])
    out = capsys.readouterr().out
    assert rc == 1 and "1 changed" in out
    assert main(["verify", "--quick"]) == 1


def test_verify_passes_untouched_artifacts(sample, capsys):
    assert main(["verify"]) == 0
    assert "0 changed" in capsys.readouterr().out


def test_verify_without_catalog_is_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(tmp_path / "none"))
    assert main(["verify"]) == 2
    assert "no catalog" in capsys.readouterr().err and not (tmp_path / "none").exists()


def test_artifact_lookup_checks_size_and_manifest(home, tmp_path):
    cat = Catalog()
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 1000)
    cat.register_artifact("k", "test", f, hash_path(f))
    assert cat.artifact("k") is not None
    f.write_bytes(b"y" * 1000)  # same size, other bytes: the quick hash of a small file is its full hash
    assert cat.artifact("k") is None


def test_a_large_file_changed_in_the_middle_passes_the_quick_check_but_not_verify(home, tmp_path, capsys):
    import os

    cat = Catalog()
    f = tmp_path / "big.bin"
    data = bytearray(os.urandom(400_000))
    f.write_bytes(bytes(data))
    cat.register_artifact("big", "test", f, hash_path(f))
    data[200_000] ^= 0xFF
    f.write_bytes(bytes(data))
    assert cat.artifact("big") is not None  # head, tail and size unchanged: the quick check cannot see it
    assert main(["verify", "--quick"]) == 0
    assert main(["verify"]) == 1
    assert "content differs" in capsys.readouterr().out
