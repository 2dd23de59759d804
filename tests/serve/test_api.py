"""The web app on a tiny catalog (a random 2-layer model, a 12-entry index) with FastAPI's TestClient."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fastapi.testclient import TestClient

from tests.serve.conftest import DEFS


@pytest.fixture(scope="module")
def client(served):
    from defsentflow.serve import create_app

    with TestClient(create_app(max_batch=8, max_wait_ms=5)) as c:
        yield c


def test_revdict_api_returns_the_entry_of_a_known_definition(client):
    r = client.get("/api/revdict", params={"q": DEFS["river"], "model": "tiny-pst", "k": 3})
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["model"] == "tiny-pst" and data["mode"] == "cosine" and data["n_entries"] == len(DEFS)
    assert [h["rank"] for h in data["results"]] == [1, 2, 3]
    assert data["results"][0]["entry"] == "river" and data["results"][0]["score"] == pytest.approx(1.0, abs=1e-4)
    # any id of the model finds the same index
    other = client.get("/api/revdict", params={"q": DEFS["river"], "model": "dsp-tiny", "k": 3}).json()
    assert other["results"] == data["results"] and other["model"] == "tiny-pst"


@pytest.mark.parametrize("params,status,text", [
    ({"q": "x" * 501, "model": "tiny-pst"}, 422, "at most 500"),
    ({"q": "", "model": "tiny-pst"}, 422, "at least 1"),
    ({"q": "   ", "model": "tiny-pst"}, 422, "empty"),
    ({"q": "a dog", "model": "tiny-pst", "k": 0}, 422, "greater than or equal to 1"),
    ({"q": "a dog", "model": "tiny-pst", "k": 101}, 422, "less than or equal to 100"),
    ({"q": "a dog", "model": "../../etc/passwd"}, 422, "pattern"),
    ({"q": "a dog", "model": "nobody"}, 404, "served models: tiny-pst"),
    ({"q": "a dog", "model": "tiny-pst", "mode": "head"}, 404, "in mode 'head'"),
    ({"q": "a dog"}, 422, "model"),
])
def test_revdict_api_refuses_bad_input_clearly(client, params, status, text):
    r = client.get("/api/revdict", params=params)
    assert r.status_code == status
    assert text in r.text


def test_concurrent_lookups_share_one_encoder_call(served, monkeypatch):
    from defsentflow.serve import create_app
    from defsentflow.serve.lookup import LookupService

    calls = []
    gate = threading.Event()
    original = LookupService.search_batch

    def counting(self, index, items):
        gate.wait(5)  # hold the first batch so that the others queue up behind it
        calls.append(len(items))
        return original(self, index, items)

    monkeypatch.setattr(LookupService, "search_batch", counting)
    app = create_app(max_batch=16, max_wait_ms=1)
    service = app.state.lookup
    served_index = app.state.catalog.resolve("tiny-pst")

    async def many():
        tasks = [asyncio.create_task(service.lookup(served_index, d, 2)) for d in DEFS.values()]
        await asyncio.sleep(0.2)
        gate.set()
        return await asyncio.gather(*tasks)

    results = asyncio.run(many())
    assert [r[0].entry for r in results] == list(DEFS)  # each caller gets its own answer
    assert sum(calls) == len(DEFS) and len(calls) <= 2 and max(calls) >= len(DEFS) - 1
    assert service.stats()[served_index.key]["items"] == len(DEFS)


def test_pages_and_json_views(client):
    page = client.get("/revdict", params={"q": DEFS["king"], "model": "tiny-pst", "k": 5})
    assert page.status_code == 200 and 'class="entry">king</td>' in page.text
    assert client.get("/revdict", params={"q": "a dog", "model": "nobody"}).status_code == 404
    assert "served models" in client.get("/revdict", params={"q": "a dog", "model": "nobody"}).text
    assert client.get("/revdict", params={"q": "a dog", "k": "many"}).status_code == 422
    assert client.get("/").url.path == "/revdict"
    board = client.get("/api/leaderboard").json()
    assert [r["model_id"] for r in board["rows"]] == ["tiny-pst"] and board["columns"] == ["stsb_dev_spearman"]
    assert "tiny-pst" in client.get("/leaderboard").text
    runs = client.get("/api/runs").json()
    assert runs[0]["run_id"] == "run-1" and runs[0]["has_report"] and runs[0]["status"] == "completed"
    assert "/runs/run-1/report/report.html" in client.get("/runs").text
    report = client.get("/runs/run-1/report/report.html")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert '<a href="/runs#run-run-1">&larr; Runs</a>' in report.text  # served: a way back to the app
    assert client.get("/runs/run-1/report").text == report.text  # no slash: the report, not a JSON error
    assert [m["model"] for m in client.get("/api/models").json()] == ["tiny-pst"]
    (sweep,) = client.get("/api/sweeps").json()
    assert sweep["sweep"] == "lr-sweep" and [p["label"] for p in sweep["points"]] == ["lr=1e-05"]
    page = client.get("/sweeps").text
    assert "<h2>lr-sweep</h2>" in page and "lr=1e-05" in page and "12.50" in page and "point_id" not in page


@pytest.mark.parametrize("name", ["../../catalog.duckdb", "..%2F..%2Fcatalog.duckdb", "report.exe", "nothing.png",
                                  "%2Fetc%2Fpasswd"])
def test_report_files_never_leave_the_report_folder(client, served, name):
    assert (served / "catalog.duckdb").is_file()
    r = client.get(f"/runs/run-1/report/{name}")
    assert r.status_code == 404


def test_report_file_check_in_the_library(served):
    from defsentflow.serve import ServeCatalog

    sc = ServeCatalog()
    assert sc.report_file("run-1", "report.html")[1] == "text/html"
    for bad in ("../catalog.duckdb", "/etc/passwd", "img/../../catalog.duckdb", "", "report.md/../../x.md"):
        assert sc.report_file("run-1", bad) is None
    assert sc.report_file("../run-1", "report.html") is None and sc.report_file("other", "report.html") is None


def test_an_empty_data_root_serves_empty_pages(home):
    from defsentflow.serve import create_app

    with TestClient(create_app()) as c:
        assert "No reverse-dictionary index" in c.get("/revdict").text
        assert c.get("/api/leaderboard").json()["rows"] == []
        assert c.get("/api/runs").json() == [] and c.get("/api/models").json() == []
        assert c.get("/api/revdict", params={"q": "a dog", "model": "m"}).status_code == 404
