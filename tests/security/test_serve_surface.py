"""Issue 22 facts 2 and 7 (serve half): security headers on every response, short error bodies."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from defsentflow.serve.app import ECHO_CHARS, SECURITY_HEADERS, create_app

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """One data root for the module: a failed run (the stored-script probe) with its report."""
    from defsentflow.report import build_report
    from defsentflow.storage import Catalog

    home = tmp_path_factory.mktemp("serve-surface")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFSENTFLOW_HOME", str(home))
        cat = Catalog()
        cat.start_run("pipeline", config={"base_model": "<img src=x onerror=alert(document.domain)>"}, run_id="r1")
        cat.end_run("r1", "failed", flow="pipeline")
        build_report("r1", analyse_missing=False)
        with TestClient(create_app(home)) as c:
            yield c


def test_every_response_has_csp_and_nosniff(client):
    assert dict((k.decode(), v.decode()) for k, v in SECURITY_HEADERS)["content-security-policy"] == CSP
    for url in ("/revdict", "/runs", "/leaderboard", "/sweeps", "/api/runs", "/api/models", "/api/docs",
                "/runs/r1/report/report.html", "/runs/r1/report/report.md", "/no-such-page",
                "/runs/r1/report/../../catalog.duckdb"):
        r = client.get(url, follow_redirects=False)
        assert r.headers.get("content-security-policy") == CSP, url
        assert r.headers.get("x-content-type-options") == "nosniff", url
    assert client.get("/runs/r1/report/report.html").status_code == 200


def test_served_pages_carry_no_inline_script(client):
    for url in ("/revdict", "/runs", "/leaderboard", "/sweeps"):
        assert "<script" not in client.get(url).text.lower(), url


def _raw_get(app, path: str, query: str) -> tuple[int, str]:
    """One GET straight through ASGI (httpx refuses URLs over 64 KiB; a server does not)."""
    import asyncio

    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 1), "server": ("testserver", 80)}
    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body.decode()


def test_422_echoes_only_a_prefix_of_a_100k_query(client):
    q = "x" * 100_000
    status, text = _raw_get(client.app, "/api/revdict", f"q={q}&model=m")
    assert status == 422
    assert len(text) < 1000 and "x" * (ECHO_CHARS + 1) not in text
    assert '"input":"' + "x" * ECHO_CHARS in text and "100000 characters" in text
    status, page = _raw_get(client.app, "/revdict", f"q={q}")
    assert "x" * 1000 not in page


def test_404_of_a_long_report_name_is_short(client):
    r = client.get("/runs/r1/report/" + "y" * 5000)
    assert r.status_code == 404 and len(r.text) < 400


def test_an_internal_error_is_a_500_with_the_headers_and_a_reason(client, monkeypatch):
    """Issue 36: a 500 came from outside the middleware, without CSP or nosniff and without a reason."""
    catalog = client.app.state.catalog

    def broken(*args, **kwargs):
        raise RuntimeError("the disk went away\nsecond line")

    monkeypatch.setattr(catalog, "runs", broken)
    with TestClient(client.app, raise_server_exceptions=False) as c:
        for url in ("/api/runs", "/runs"):
            r = c.get(url)
            assert r.status_code == 500, url
            assert r.headers.get("content-security-policy") == CSP and r.headers.get("x-content-type-options") == "nosniff"
            assert r.json()["detail"] == "internal error: RuntimeError: the disk went away"
