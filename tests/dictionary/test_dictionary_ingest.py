from __future__ import annotations

import hashlib
import json

import pytest

from defsentflow.dictionary import (
    DictionaryConfig,
    SourceSpec,
    ingest_dictionary,
    load_dictionary,
    load_examples,
    plan_dictionary,
)
from defsentflow.storage import Catalog


def _cfg(name, *sources, **kw):
    return DictionaryConfig(name=name, sources=[SourceSpec(kind=k, paths=[str(p) for p in paths]) for k, *paths in sources],
                            **kw)


def _tree(root):
    """Every file under the data root with its content hash (what "nothing written" compares)."""
    return {str(p.relative_to(root)): hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture()
def sources(write):
    tsv = write("a.tsv", "dog\ta domesticated canid\nbad line\ncat\tsmall feline\n")
    jsonl = write("b.jsonl", json.dumps({"entry": "Dog", "definition": "a domesticated canid", "examples": ["a dog barked"]})
                  + "\n" + json.dumps({"entry": "owl", "definition": "a nocturnal bird", "tags": ["bird"]}) + "\n")
    return tsv, jsonl


def test_ingest_writes_parquet_and_catalog_in_one_go(home, sources, tiny_oewn):
    tsv, jsonl = sources
    res = ingest_dictionary(_cfg("mix", ("tsv", tsv), ("jsonl", jsonl), ("oewn", tiny_oewn)))
    assert res.status == "built"
    assert res.path == home / "parquet" / "dictionaries" / "mix" / res.key
    s = res.summary
    assert (s["read"], s["accepted"], s["duplicates"], s["quarantined"]) == (3 + 2 + 8, 2 + 1 + 6, 0 + 1 + 1, 1 + 0 + 1)
    defs = load_dictionary("mix")
    assert defs.num_rows == s["definitions"] == s["accepted"]
    dog = [r for r in defs.to_pylist() if r["entry"] == "dog"]
    assert [(r["definition"], r["sources"]) for r in dog] == [("a domesticated canid", ["tsv", "jsonl"])]
    assert load_examples("mix").column("example").to_pylist().count("a dog barked") == 1
    owl = Catalog().query("SELECT meta->>'$.tags[0]' AS tag FROM definitions WHERE dataset = 'mix' AND entry = 'owl'")
    assert owl == [{"tag": "bird"}]

    cat = Catalog()
    by_split = {r["split"]: r["n"] for r in cat.query("SELECT split, count(*) AS n FROM definitions WHERE dataset = 'mix' GROUP BY 1")}
    assert sum(by_split.values()) == defs.num_rows
    assert by_split == {k: v["definitions"] for k, v in s["splits"].items() if v["definitions"]}
    row = cat.query("SELECT * FROM dictionaries WHERE name = 'mix'")[0]
    assert (row["artifact_key"], row["entries"], row["definitions"]) == (res.key, s["entries"], s["definitions"])
    art = cat.artifact(res.key)
    assert art["kind"] == "dictionary" and art["content_hash"] == s["content_hash"]
    assert set(art["input_hashes"]) == {f"tsv:{tsv}", f"jsonl:{jsonl}", f"oewn:{tiny_oewn}"}
    q = cat.query("SELECT source, file, line, reason FROM quarantine WHERE dataset = 'mix' ORDER BY source")
    assert [(r["source"], r["line"], r["reason"]) for r in q] == [("oewn", 13, "dangling_reference"), ("tsv", 2, "malformed")]
    assert len(q) == 2
    summ = cat.query("SELECT * FROM ingest_summaries WHERE dataset = 'mix'")
    assert len(summ) == 1 and summ[0]["read"] == s["read"] and summ[0]["status"] == "built"


def test_unchanged_sources_write_nothing(home, sources):
    tsv, jsonl = sources
    cfg = _cfg("d", ("tsv", tsv), ("jsonl", jsonl))
    first = ingest_dictionary(cfg)
    before = _tree(home)
    again = ingest_dictionary(cfg)
    assert again.status == "unchanged" and again.key == first.key and again.summary == first.summary
    assert _tree(home) == before


def test_changed_source_or_seed_is_a_new_key_and_replaces_the_rows(home, sources, write):
    tsv, jsonl = sources
    first = ingest_dictionary(_cfg("d", ("tsv", tsv)))
    reseeded = ingest_dictionary(_cfg("d", ("tsv", tsv), seed=7))
    assert reseeded.key != first.key and reseeded.status == "built"
    assert Catalog().query("SELECT artifact_key FROM dictionaries WHERE name = 'd'")[0]["artifact_key"] == reseeded.key
    # Going back to a config whose artifact exists reloads its rows without rebuilding.
    back = ingest_dictionary(_cfg("d", ("tsv", tsv)))
    assert (back.key, back.status) == (first.key, "registered")
    write("a.tsv", "dog\ta domesticated canid\nemu\ta large bird\nowl\ta nocturnal bird\n")
    changed = ingest_dictionary(_cfg("d", ("tsv", tsv)))
    assert changed.status == "built" and changed.key not in (first.key, reseeded.key)
    rows = Catalog().query("SELECT entry FROM definitions WHERE dataset = 'd' ORDER BY entry")
    assert [r["entry"] for r in rows] == ["dog", "emu", "owl"]
    assert Catalog().query("SELECT count(*) AS n FROM quarantine WHERE dataset = 'd'")[0]["n"] == 0
    assert sum(load_dictionary("d", split=s).num_rows for s in ("train", "dev", "test")) == 3
    # Older artifacts stay reachable by key.
    assert load_dictionary(first.key).column("entry").to_pylist() == ["cat", "dog"]


def test_artifact_found_under_another_key_is_registered_not_rebuilt(home, sources):
    tsv, _ = sources
    a = ingest_dictionary(_cfg("one", ("tsv", tsv)))
    b = ingest_dictionary(_cfg("two", ("tsv", tsv)))
    assert b.key == a.key and b.status == "registered" and b.path == a.path
    assert Catalog().query("SELECT count(DISTINCT dataset) AS n FROM definitions")[0]["n"] == 2


def test_missing_source_is_an_error_and_nothing_is_written(home, sources, tmp_path):
    tsv, _ = sources
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        ingest_dictionary(_cfg("d", ("tsv", tsv), ("jsonl", tmp_path / "missing.jsonl")))
    assert not (home / "parquet").exists()
    assert not (home / "catalog.duckdb").exists() or not Catalog().query("SELECT * FROM dictionaries")


def test_all_records_bad_is_an_error(home, write):
    path = write("bad.tsv", "no tab here\n\n")
    with pytest.raises(ValueError, match="no definition accepted"):
        ingest_dictionary(_cfg("d", ("tsv", path)))
    assert not (home / "parquet" / "dictionaries" / "d").exists() or not any((home / "parquet" / "dictionaries" / "d").iterdir())


@pytest.mark.parametrize("kw, match", [
    ({"variant": "b"}, "variant b is a single source"),
    ({"variant": "c"}, "variant c needs a tokenizer"),
    ({"tokenizer": "x"}, "only used by variant c"),
    ({"variant": "z"}, "Input should be 'a', 'b' or 'c'"),
])
def test_config_rules(sources, kw, match):
    tsv, jsonl = sources
    with pytest.raises(ValueError, match=match):
        _cfg("d", ("tsv", tsv), ("jsonl", jsonl), **kw)


def test_key_ignores_paths_but_not_content(sources, tmp_path):
    tsv, _ = sources
    copy = tmp_path / "copy.tsv"
    copy.write_bytes(tsv.read_bytes())
    assert plan_dictionary(_cfg("d", ("tsv", tsv))).key == plan_dictionary(_cfg("d", ("tsv", copy))).key
    copy.write_text("dog\tanother meaning\n")
    assert plan_dictionary(_cfg("d", ("tsv", tsv))).key != plan_dictionary(_cfg("d", ("tsv", copy))).key


def test_load_unknown_dataset(home):
    with pytest.raises(KeyError, match="no dictionary"):
        load_dictionary("nope")
