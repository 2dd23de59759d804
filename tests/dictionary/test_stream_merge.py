"""The streamed DuckDB merge against the in-memory algorithm it replaced (a slow but obvious reference)."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from defsentflow.dictionary import merge_records
from defsentflow.dictionary.records import DefinitionRecord, RejectedRecord
from defsentflow.dictionary.schemas import DEFINITIONS_SCHEMA, EXAMPLES_SCHEMA
from defsentflow.dictionary.split import split_rows
from defsentflow.dictionary.validate import check_record, check_text, normalize_entry, normalize_text


def reference(sources, *, keep=lambda e: True, split_by="entry"):
    """The merge as main did it before streaming: dicts and lists in memory, record by record."""
    index, rows, counts, quarantine, bad_seen = {}, [], {}, [], set()
    for name, records in sources:
        c = counts.setdefault(name, [0, 0, 0, 0, 0])  # read, accepted, duplicates, excluded, quarantined
        for rec in records:
            c[0] += 1
            bad = rec if isinstance(rec, RejectedRecord) else check_record(rec)
            if bad is not None:
                quarantine.append((bad.source, bad.line, bad.reason, bad.detail))
                c[4] += 1
                continue
            key = (normalize_entry(rec.entry), normalize_text(rec.definition))
            if key not in index:
                index[key] = len(rows)
                meta = json.dumps(rec.meta, sort_keys=True, ensure_ascii=False, default=str) if rec.meta else None
                rows.append({"key": key, "pos": rec.pos, "synset": rec.synset, "origin": name, "sources": [name],
                             "meta": meta, "examples": {}})
                c[1] += 1
            else:
                r = rows[index[key]]
                c[2] += 1
                if name not in r["sources"]:
                    r["sources"].append(name)
                r["pos"], r["synset"] = r["pos"] or rec.pos, r["synset"] or rec.synset
            r = rows[index[key]]
            for ex in rec.examples:
                text = normalize_text(ex)
                if text in r["examples"]:
                    continue
                problem = check_text(ex, "example")
                if problem is None:
                    r["examples"][text] = None
                elif (name, ex) not in bad_seen:
                    bad_seen.add((name, ex))
                    quarantine.append((name, rec.line, problem[0], f"example of {key[0]!r}: {problem[1]}"))
    for r in rows:
        if not keep(r["key"][0]):
            counts[r["origin"]][1] -= 1
            counts[r["origin"]][3] += 1
    order = sorted((i for i, r in enumerate(rows) if keep(r["key"][0])), key=lambda i: (rows[i]["key"][0], i))
    splits = split_rows([rows[i]["key"][0] for i in order], [rows[i]["key"][1] for i in order], split_by, 0)
    defs = pa.table({"def_id": list(range(len(order))), "entry": [rows[i]["key"][0] for i in order],
                     "definition": [rows[i]["key"][1] for i in order], "split": splits,
                     "pos": [rows[i]["pos"] for i in order], "synset": [rows[i]["synset"] for i in order],
                     "sources": [rows[i]["sources"] for i in order], "meta": [rows[i]["meta"] for i in order]},
                    schema=DEFINITIONS_SCHEMA)
    ex = [(d, rows[i]["key"][0], t, splits[d]) for d, i in enumerate(order) for t in rows[i]["examples"]]
    examples = pa.table(dict(zip(EXAMPLES_SCHEMA.names, map(list, zip(*ex)))) if ex else
                        {n: [] for n in EXAMPLES_SCHEMA.names}, schema=EXAMPLES_SCHEMA)
    return defs, examples, counts, sorted(quarantine)


def _records(name: str, seed: int, n: int):
    rng = random.Random(seed)
    words = ["dog", "Dog", "cat", "owl", "bank", "Bank ", "river"]
    glosses = ["a pet", "a  pet", "a bird", "land by water", "a money house", "", "x\ty"]
    examples = ["the dog barked", "the  dog barked", "bad\texample", "a cat sat", "\x07bell"]
    out = []
    for line in range(1, n + 1):
        if rng.random() < 0.05:
            out.append(RejectedRecord(name, f"{name}.txt", line, "malformed", "???", "broken"))
            continue
        meta = rng.choice([None, {"k": rng.randint(0, 3)}])
        out.append(DefinitionRecord(rng.choice(words), rng.choice(glosses), name, f"{name}.txt", line,
                                    pos=rng.choice([None, "", "n", "v"]), synset=rng.choice([None, "", "s1", "s2"]),
                                    examples=tuple(rng.sample(examples, rng.randint(0, 3))), meta=meta))
    return out


@pytest.mark.parametrize("split_by, filtered", [("entry", False), ("gloss", True)])
def test_streamed_merge_equals_the_in_memory_reference(split_by, filtered):
    sources = [("a", _records("a", 1, 300)), ("b", _records("b", 2, 200)), ("a", _records("a", 3, 50))]
    keep = (lambda e: e != "owl") if filtered else (lambda e: True)
    entry_filter = (lambda batch: [keep(e) for e in batch]) if filtered else None
    m = merge_records(sources, split_by=split_by, entry_filter=entry_filter)
    defs, examples, counts, quarantine = reference(sources, keep=keep, split_by=split_by)
    assert m.definitions.equals(defs) and m.examples.equals(examples)
    assert {n: [c.read, c.accepted, c.duplicates, c.excluded, c.quarantined] for n, c in m.counts.items()} == counts
    got = sorted((r["source"], r["line"], r["reason"], r["detail"]) for r in m.quarantine.to_pylist())
    assert got == quarantine and m.examples_quarantined == sum(1 for q in quarantine if "example of" in q[3])
    assert m.examples_quarantined > 0 and m.examples.num_rows > 0 and len(m.counts) == 2  # the cases are exercised
    assert not filtered or m.counts["a"].excluded + m.counts["b"].excluded > 0
