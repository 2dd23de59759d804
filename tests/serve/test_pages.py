"""The web pages a person opens first: /revdict starts with an example look-up, shows each hit's
definition and a second model beside the first; /leaderboard groups dev and test figures and links
each run."""

from __future__ import annotations

import json

import pytest

from tests.serve.conftest import DEFS


@pytest.fixture()
def client(home, tiny_bert_dir, tmp_path):
    from fastapi.testclient import TestClient

    from defsentflow.dictionary.config import DictionaryConfig
    from defsentflow.dictionary.ingest import ingest_dictionary
    from defsentflow.revdict import build_revdict_index
    from defsentflow.serve import create_app
    from defsentflow.storage import Catalog

    src = tmp_path / "tiny.jsonl"
    src.write_text("".join(json.dumps({"entry": e, "definition": d}) + "\n" for e, d in DEFS.items()))
    ingest_dictionary(DictionaryConfig(name="tiny", sources=[{"kind": "jsonl", "paths": [str(src)]}]))
    build_revdict_index(str(tiny_bert_dir), "tiny", mode="cosine", device="cpu")
    cat = Catalog()
    cat.register_model("tiny-pst", tiny_bert_dir, method="pst", pooling="mean", run_id="run-1")
    cat.start_run("pipeline", config={"name": "tiny"}, run_id="run-1")
    m = lambda t, v: {"task": t, "setting": "all", "metric": "spearman", "value": v, "n": 3, "pooling": "mean"}  # noqa: E731
    cat.record_metrics("tiny-pst", [m("stsb-dev", 50.0), m("sts12", 40.0)], run_id="run-1")
    with TestClient(create_app(home)) as c:
        yield c


def test_revdict_opens_with_an_example_shows_definitions_and_a_model_beside_and_the_leaderboard(client):
    from defsentflow.serve.app import EXAMPLE_QUERY

    page = client.get("/revdict").text
    assert 'id="example"' in page and f">{EXAMPLE_QUERY}</textarea>" in page and 'id="results"' in page
    shown = {d for d in DEFS.values() if f'class="definition">{d}</td>' in page}
    assert len(shown) == 10  # k = 10 hits, each with its entry's definition
    page = client.get("/revdict", params={"q": DEFS["king"], "beside": "tiny-pst", "k": 3}).text
    assert 'id="example"' not in page and 'id="beside-results"' in page
    assert 'class="entry">king</td>' in page and f'class="definition">{DEFS["king"]}</td>' in page
    assert "<script" not in page and " on" + "click=" not in page  # nothing a script-src 'self' policy refuses
    # the leaderboard: dev and test column groups, short headings under them, a link to each run
    page = client.get("/leaderboard").text
    assert page.index('class="group dev"') < page.index('class="group test"')
    assert 'title="stsb_dev_spearman">stsb</th>' in page and 'title="sts12_test_spearman">sts12</th>' in page
    assert 'href="/runs#run-run-1">run-1</a>' in page and 'id="run-run-1"' in client.get("/runs").text
