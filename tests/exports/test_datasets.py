"""Dataset exports: a DatasetDict with real splits whose sizes match `defsentflow datasets`, and a card."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from defsentflow.cli import main
from defsentflow.storage import Catalog, hash_path

WORDS = ["dog", "cat", "river", "tree", "house", "king", "queen", "bread", "apple", "book", "song", "car",
         "bird", "fish", "road", "door", "window", "city", "child", "light", "night", "sun", "sea", "leaf",
         "wheel", "page", "game", "ball", "room", "town"]


def _ingest(tmp_path) -> None:
    lines = [f"{w}{i}\ta {w} of the {kind} kind" for w in WORDS for i in range(3) for kind in ("first", "second")]
    (tmp_path / "d.tsv").write_text("\n".join(lines) + "\n")
    assert main(["--quiet", "ingest", "dictionary", "--source", "tsv", str(tmp_path / "d.tsv"), "--name", "toy"]) == 0


def test_dictionary_export_loads_with_the_catalog_split_sizes(home, tmp_path, capsys, monkeypatch):
    from datasets import load_dataset, load_from_disk

    _ingest(tmp_path)
    out = tmp_path / "export"
    monkeypatch.delenv("DEFSENTFLOW_QUIET", raising=False)
    capsys.readouterr()
    assert main(["export", "dictionary", "toy", str(out)]) == 0
    assert "Saving the dataset" not in capsys.readouterr().err  # in a log, datasets' bars were three lines per split
    counts = {r["split"]: r["n"] for r in Catalog().query(
        "SELECT split, count(*) AS n FROM definitions WHERE dataset = 'toy' GROUP BY split")}
    ds = load_from_disk(str(out))
    assert sorted(ds) == ["test", "train", "validation"] and min(counts.values()) > 0
    assert {k: ds[k].num_rows for k in ds} == {"train": counts.get("train", 0), "validation": counts.get("dev", 0),
                                               "test": counts.get("test", 0)}
    assert "split" not in ds["train"].column_names and "definition" in ds["train"].column_names
    by_parquet = load_dataset("parquet", data_dir=str(out))  # beside save_to_disk's Arrow files
    assert {k: by_parquet[k].num_rows for k in by_parquet} == {k: ds[k].num_rows for k in ds}
    assert by_parquet["validation"]["definition"] == ds["validation"]["definition"]
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "data/validation-00000-of-00001.parquet" in card and "load_from_disk" in card
    assert "\nlicense: other\n" in card  # a TSV file of unknown licence; WordNet's would be cc-by-4.0
    # a second export replaces the first; an export into the data root is refused in one line
    assert main(["export", "dictionary", "toy", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", "dictionary", "toy", str(home / "x")]) == 2
    assert "inside the data root" in capsys.readouterr().err
    assert main(["export", "dictionary", "nosuch", str(tmp_path / "y")]) == 2


def test_the_card_licence_is_the_sources_one():
    from defsentflow.exports.datasets import licence_id

    assert licence_id(["sample: CC BY 4.0 (the LICENSE.md beside oewn-sample.jsonl)"]) == "cc-by-4.0"
    assert licence_id(["a: CC BY 4.0 (Open English WordNet)", "b: the licence of the TSV file you ingested"]) == "other"


def test_pairs_export_splits_by_first_sentence(home, tmp_path):
    from datasets import load_from_disk

    s1 = [f"the {w} is here" for w in WORDS for _ in range(3)]
    table = pa.table({"s1": s1, "s2": [f"{s} again" for s in s1], "score": pa.array([0.5] * len(s1), pa.float32()),
                      "kind": ["neighbour"] * len(s1)})
    path = home / "pairs.parquet"
    pq.write_table(table, path)
    Catalog().register_artifact("k" * 16, "pairs", path, hash_path(path), name="toy-pairs")
    out = tmp_path / "pairs"
    assert main(["export", "pairs", "toy-pairs", str(out)]) == 0
    ds = load_from_disk(str(out))
    assert sum(ds[k].num_rows for k in ds) == len(s1) and ds["train"].num_rows > 0
    seen = {k: set(ds[k]["s1"]) for k in ds}
    assert not (seen["train"] & seen["test"]) and not (seen["train"] & seen["validation"])


@pytest.mark.parametrize("what", ["dictionary", "pairs"])
def test_unknown_name_is_one_line(home, tmp_path, capsys, what):
    assert main(["export", what, "nosuch", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nosuch" in err
