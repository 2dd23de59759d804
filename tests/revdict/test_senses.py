"""Each hit with the sense that matched: the entry's definition nearest to the query, on the page, in
/api/revdict and in `revdict --json` (for `cat`, the feline, not the first listed definition)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from defsentflow.revdict.senses import SenseMatcher, definitions_by_entry

# `cat` as the embedded WordNet sample lists it (the CAT scan first), and a few neighbours.
CAT = [
    "a method of examining body organs by scanning them with X rays and using a computer to construct a series of "
    "cross-sectional scans along a single axis",
    "feline mammal usually having thick soft fur and no ability to roar",
    "an informal term for a youth or man",
    "a spiteful woman gossip",
    "a whip with nine knotted cords",
    "a large tracked vehicle that is propelled by two endless metal belts; frequently used for moving earth in "
    "construction and farm work",
    "beat with a cat-o'-nine-tails",
]
OTHERS = {
    "dog": ["a member of the genus Canis that has been domesticated by man since prehistoric times",
            "a dull unattractive unpleasant girl or woman"],
    "river": ["a large natural stream of water (larger than a creek)"],
    "bread": ["food made from dough of flour or meal and usually raised with yeast or baking powder and then baked"],
    "car": ["a motor vehicle with four wheels; usually propelled by an internal combustion engine"],
}
QUERY = "a small domesticated feline mammal kept as a pet"
FELINE = CAT[1]


def _words(texts: list[str]) -> np.ndarray:
    """A bag-of-letters encoder: deterministic, no model."""
    out = np.zeros((len(texts), 26), dtype=np.float32)
    for i, t in enumerate(texts):
        for ch in t.lower():
            if "a" <= ch <= "z":
                out[i, ord(ch) - 97] += 1
    return out


def test_the_nearest_definition_by_cosine_as_a_slow_loop_finds_it_and_each_is_encoded_once():
    definitions = {"cat": CAT, **OTHERS}
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return _words(texts)

    matcher = SenseMatcher(encode, definitions)
    queries = ["a domesticated carnivorous mammal that barks", QUERY]
    hits = [["dog", "cat", "nosuch"], ["cat", "river"]]
    found = matcher.match(_words(queries), hits)
    for q, entries, row in zip(queries, hits, found):
        for e, sense in zip(entries, row):
            if e == "nosuch":
                assert sense is None  # no known definition: nothing shown
                continue
            cos = [float(_words([d])[0] @ _words([q])[0] / np.linalg.norm(_words([d])[0]) / np.linalg.norm(_words([q])[0]))
                   for d in definitions[e]]
            assert sense.definition == definitions[e][int(np.argmax(cos))] and sense.score == pytest.approx(max(cos), abs=1e-5)
    assert len(calls) == 1 and sorted(calls[0]) == sorted({*CAT, *OTHERS["dog"], *OTHERS["river"]})  # one batch
    matcher.match(_words([QUERY]), [["cat", "bread"]])
    assert calls[1] == OTHERS["bread"]  # the cat's definitions were kept


@pytest.fixture(scope="module")
def pets(tmp_path_factory, minilm_dir):
    """A data root with a 5-entry dictionary (cat with seven senses) and its cosine index for MiniLM."""
    from defsentflow.dictionary.config import DictionaryConfig
    from defsentflow.dictionary.ingest import ingest_dictionary
    from defsentflow.revdict import build_revdict_index
    from defsentflow.storage import Catalog

    home = tmp_path_factory.mktemp("pets")
    src = home.parent / "pets.jsonl"
    src.write_text("".join(json.dumps({"entry": e, "definition": d}) + "\n"
                           for e, defs in {"cat": CAT, **OTHERS}.items() for d in defs))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFSENTFLOW_HOME", str(home))
        ingest_dictionary(DictionaryConfig(name="pets", sources=[{"kind": "jsonl", "paths": [str(src)]}]))
        build_revdict_index(str(minilm_dir), "pets", mode="cosine", device="cpu")
        Catalog().register_model("minilm-pets", minilm_dir, method="base", pooling="mean")
    return home


def test_cat_is_shown_with_its_feline_sense_on_the_page_in_the_api_and_the_cli(pets, minilm_dir, capsys, monkeypatch):
    from fastapi.testclient import TestClient

    from defsentflow.cli import main
    from defsentflow.serve import create_app

    with TestClient(create_app(pets)) as client:
        answer = client.get("/api/revdict", params={"q": QUERY, "model": "minilm-pets", "k": 5}).json()
        page = client.get("/revdict", params={"q": QUERY, "model": "minilm-pets", "k": 5}).text
    assert "results" in answer, answer
    cat = next(r for r in answer["results"] if r["entry"] == "cat")
    assert cat["definition"] == FELINE and 0 < cat["definition_score"] <= 1
    assert all(r["definition"] in {"cat": CAT, **OTHERS}[r["entry"]] for r in answer["results"])
    row = page[page.index('class="entry">cat</td>'):]
    assert row[:row.index("</tr>")].count(f'class="definition">{FELINE}</td>') == 1
    assert f">{CAT[0]}</td>" not in page  # the CAT scan, cat's first listed definition, is not what matched

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(pets))
    assert main(["revdict", str(minilm_dir), QUERY, "--dictionary", "pets", "--mode", "cosine", "-k", "5",
                 "--device", "cpu", "--json"]) == 0
    (printed,) = json.loads(capsys.readouterr().out)
    cat = next(r for r in printed["entries"] if r["entry"] == "cat")
    assert cat["definition"] == FELINE and cat["definition_score"] == pytest.approx(
        next(r for r in answer["results"] if r["entry"] == "cat")["definition_score"], abs=1e-3)


def test_definitions_by_entry_keeps_the_order_of_the_table():
    table = pa.table({"entry": ["cat", "dog", "cat"], "definition": ["b", "d", "a"]})
    assert definitions_by_entry(table) == {"cat": ["b", "a"], "dog": ["d"]}


def test_a_cosine_index_reads_its_definitions_vectors_instead_of_encoding_them(pets, monkeypatch):
    from defsentflow.revdict import build_revdict_index
    from defsentflow.revdict.senses import stored_vectors

    monkeypatch.setenv("DEFSENTFLOW_HOME", str(pets))
    index = build_revdict_index("minilm", "pets", mode="cosine", device="cpu")  # the fixture's, found

    def encode(texts: list[str]) -> np.ndarray:
        raise AssertionError(f"encoded {texts[:2]}: the index's build left these vectors in the embedding cache")

    matcher = SenseMatcher(encode, {"cat": CAT, **OTHERS}, stored=stored_vectors(index))
    (row,) = matcher.match(index.query_vectors([QUERY], device="cpu"), [["cat", "dog"]])
    assert row[0].definition == FELINE and row[1].definition in OTHERS["dog"]
