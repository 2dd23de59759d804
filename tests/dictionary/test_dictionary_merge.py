from __future__ import annotations

import json

from defsentflow.dictionary import merge_records, read_jsonl, read_tsv
from defsentflow.dictionary.records import DefinitionRecord

# (line text, expected outcome): the reference the counts are checked against.
MIXED = [
    ("dog\ta domesticated canid", "accepted"),
    ("Dog\ta domesticated canid", "duplicate"),  # same entry after case folding
    ("dog\t  a   domesticated canid ", "duplicate"),  # same definition after whitespace normalisation
    ("", "empty"),
    ("   ", "whitespace_only"),
    ("cat", "malformed"),
    ("cat\tsmall feline\textra", "malformed"),
    ("\tno entry", "empty"),
    ("cat\t   ", "whitespace_only"),
    ("x" * 1001 + "\tlong entry", "too_long"),
    ("bell\tring\x07ing", "control_character"),
    (b"bad\t\xff\xfe", "invalid_utf8"),
    ("cat\tsmall feline", "accepted"),
    ("dog\ta loyal pet", "accepted"),
]


def mixed_file(write):
    data = b"\n".join(t if isinstance(t, bytes) else t.encode() for t, _ in MIXED) + b"\n"
    return write("mixed.tsv", data)


def test_mixed_file_counts_and_every_bad_line_quarantined_with_its_reason(write):
    path = mixed_file(write)
    m = merge_records([("tsv", read_tsv(path))])
    c = m.counts["tsv"]
    expect = {o: sum(1 for _, x in MIXED if x == o) for o in {x for _, x in MIXED}}
    assert c.read == len(MIXED)
    assert c.accepted == expect["accepted"] == m.definitions.num_rows
    assert c.duplicates == expect["duplicate"]
    assert c.quarantined == len(MIXED) - expect["accepted"] - expect["duplicate"]
    assert c.balanced()
    q = m.quarantine.to_pylist()
    assert sorted((r["line"], r["reason"]) for r in q) == sorted(
        (i, o) for i, (_, o) in enumerate(MIXED, 1) if o not in ("accepted", "duplicate"))
    assert all(r["file"] == str(path) and r["source"] == "tsv" for r in q)
    assert next(r for r in q if r["reason"] == "invalid_utf8")["raw"] == "bad\t\\xff\\xfe"


def test_sources_merge_into_one_entry_and_keep_their_names(write):
    tsv = write("a.tsv", "Bank\tsloping land beside water\nbank\ta financial institution\n")
    jsonl = write("b.jsonl", json.dumps({"entry": "bank", "definition": "a financial  institution", "pos": "n",
                                         "examples": ["she went to the bank"], "src": "x"}) + "\n"
                  + json.dumps({"entry": "river", "definition": "a large natural stream of water"}) + "\n")
    m = merge_records([("tsv", read_tsv(tsv)), ("jsonl", read_jsonl(jsonl))])
    rows = m.definitions.to_pylist()
    assert [(r["entry"], r["definition"], r["sources"]) for r in rows] == [
        ("bank", "sloping land beside water", ["tsv"]),
        ("bank", "a financial institution", ["tsv", "jsonl"]),
        ("river", "a large natural stream of water", ["jsonl"]),
    ]
    assert [r["def_id"] for r in rows] == [0, 1, 2]
    # The first record gives the metadata; a later one fills in a missing part of speech.
    assert rows[1]["pos"] == "n" and rows[1]["meta"] is None
    assert m.examples.to_pylist() == [{"def_id": 1, "entry": "bank", "example": "she went to the bank",
                                       "split": rows[1]["split"]}]
    assert (m.counts["tsv"].accepted, m.counts["jsonl"].accepted, m.counts["jsonl"].duplicates) == (2, 1, 1)


def test_case_fold_off_keeps_case_variants_apart():
    recs = [DefinitionRecord("Apple", "a company", "t", "f", 1), DefinitionRecord("apple", "a fruit", "t", "f", 2)]
    assert sorted(merge_records([("t", recs)], case_fold=False).definitions.column("entry").to_pylist()) == ["Apple", "apple"]
    assert merge_records([("t", recs)]).definitions.column("entry").to_pylist() == ["apple", "apple"]


def test_bad_examples_are_quarantined_but_not_the_definition():
    recs = [DefinitionRecord("dog", "a canid", "t", "f", 1, examples=("good one", "bad\x00one", "good one"))]
    m = merge_records([("t", recs)])
    assert m.definitions.num_rows == 1 and m.examples.column("example").to_pylist() == ["good one"]
    assert m.examples_quarantined == 1 and m.quarantine.column("reason").to_pylist() == ["control_character"]
    assert m.counts["t"].quarantined == 0 and m.counts["t"].balanced()


def test_entry_filter_excludes_and_counts():
    recs = [DefinitionRecord(e, f"def {i}", "t", "f", i) for i, e in enumerate(["dog", "zebra", "dog", "cat"])]
    m = merge_records([("t", recs)], entry_filter=lambda batch: [e != "zebra" for e in batch])
    assert sorted(set(m.definitions.column("entry").to_pylist())) == ["cat", "dog"]
    c = m.counts["t"]
    assert (c.read, c.accepted, c.excluded, c.duplicates) == (4, 3, 1, 0) and c.balanced()
