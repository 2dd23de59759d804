"""The web app: a read-only view of the catalog and a reverse dictionary over its indexes.

Pages: ``/revdict`` (type a definition, pick a model, see the top-k entries), ``/leaderboard``,
``/runs`` (with each run's report and plots), ``/sweeps``. JSON: ``/api/revdict?q=&model=&k=``,
``/api/models``, ``/api/leaderboard``, ``/api/runs``, ``/api/sweeps``, ``/api/stats``.

Nothing a request sends reaches the filesystem as a path: models are looked up by catalog id,
report files by run id and a name checked to stay inside the report folder the catalog records.
A query longer than :data:`MAX_QUERY_CHARS` or a k above :data:`MAX_K` is refused (422); a model
without a served index is a 404 naming the models that are served. ``model=`` also takes an alias
(``demo@champion``), resolved at every request (:class:`~defsentflow.serve.aliases.AliasFollower`):
after a promotion or a rollback the next request answers from the alias's new model, no restart.
"""

from __future__ import annotations

import html
import os
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel

from defsentflow.encoders.finite import NonFiniteError
from defsentflow.limits import LIMITS
from defsentflow.registry.aliases import is_alias
from defsentflow.report.leaderboard import load_leaderboard
from defsentflow.revdict.senses import definitions_by_entry
from defsentflow.serve.aliases import AliasFollower
from defsentflow.serve.catalog import ID_PATTERN, MODEL_PATTERN, ServeCatalog, UnknownModelError
from defsentflow.serve.lookup import LookupService
from defsentflow.serve.pages import render
from defsentflow.storage import CatalogLockedError
from defsentflow.storage.catalog import CatalogError, QueryTimeoutError
from defsentflow.storage.integrity import ArtifactChangedError

__all__ = ["ECHO_CHARS", "MAX_K", "MAX_QUERY_CHARS", "SECURITY_HEADERS", "RevdictAnswer", "RevdictHit", "create_app"]

MAX_QUERY_CHARS = 500
MAX_K = 100
ECHO_CHARS = 80  # an error body repeats at most this much of a rejected input
# Sent with every response, the served run reports included: no script runs but the app's own files.
SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                 b"img-src 'self' data:; object-src 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
)


def short(value: Any) -> str:
    """``value`` as text, cut to :data:`ECHO_CHARS` characters (with its full length) for an error body."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= ECHO_CHARS else f"{text[:ECHO_CHARS]}... ({len(text)} characters)"


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP response (a pure ASGI
    wrapper, so streaming and file responses pass through unbuffered)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((k, v) for k, v in SECURITY_HEADERS if k not in names)]
            await send(message)

        await self.app(scope, receive, send_with_headers)
EXAMPLE_QUERY = "a domesticated carnivorous mammal that barks"   # what /revdict opens with


class RevdictHit(BaseModel):
    """One entry; ``definition``: the one of its definitions nearest to the query, with that
    definition's cosine to the query (``definition_score``); None where the index's dictionary is
    not in the catalog."""

    rank: int
    entry: str
    score: float
    definition: str | None = None
    definition_score: float | None = None


class RevdictAnswer(BaseModel):
    """``/api/revdict``: the top-k entries for one definition (a typed answer: FastAPI serialises
    it straight to JSON bytes)."""

    query: str
    model: str                      # the model that answered (an alias's holder at this request)
    alias: str | None = None        # the alias asked for, when ``model=`` was one (demo@champion)
    mode: str
    dictionary: str | None
    n_entries: int
    results: list[RevdictHit]


def api_page(schema: dict[str, Any]) -> str:
    """The API's routes as a plain HTML page (method, path, summary, parameters) from its OpenAPI schema."""
    rows = []
    for path, ops in sorted(schema.get("paths", {}).items()):
        for method, op in ops.items():
            params = ", ".join(f"{p.get('name')} ({p.get('in')}{', required' if p.get('required') else ''})"
                               for p in op.get("parameters", []))
            rows.append(f"<tr><td>{html.escape(method.upper())}</td><td><code>{html.escape(path)}</code></td>"
                        f"<td>{html.escape(op.get('summary') or '')}</td><td>{html.escape(params)}</td></tr>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>defsentflow API</title></head><body>"
            "<h1>defsentflow API</h1><p>The machine-readable schema: <a href='/openapi.json'>/openapi.json</a></p>"
            "<table><tr><th>method</th><th>path</th><th>what</th><th>parameters</th></tr>"
            + "".join(rows) + "</table></body></html>")


def create_app(root: str | os.PathLike | None = None, *, max_batch: int = 32, max_wait_ms: float = 10.0,
               device: str = "cpu", threads: int | None = None, prefilter: bool | None = None,
               query_timeout: float | None = 30.0) -> FastAPI:
    """The app over the catalog of data root ``root`` (default ``$DEFSENTFLOW_HOME`` or ``./storage``).

    Args:
        max_batch: most look-ups encoded together (1: one request at a time).
        max_wait_ms: how long a look-up waits for others to share its batch.
        device: where query encoders run.
        threads: torch and faiss threads of the look-up worker (default: the CPU cores).
        prefilter: exact search of batches through a certified bf16 prefilter (default: where the
            CPU has bf16 dot products); False: faiss's flat search only.

    Example:
        >>> import uvicorn
        >>> uvicorn.run(create_app("storage"), host="127.0.0.1", port=8000)
    """
    if not 1 <= max_batch <= LIMITS["batch"] or not 0 <= max_wait_ms <= LIMITS["wait_ms"]:
        raise ValueError(f"max_batch must be 1..{LIMITS['batch']} and max_wait_ms 0..{LIMITS['wait_ms']}, "
                         f"got {max_batch} and {max_wait_ms}")
    from defsentflow.encoders.loading import pick_device  # lazy: torch loads with the first look-up otherwise

    device = str(pick_device(device))  # a device this machine lacks is refused here, not on every look-up
    catalog = ServeCatalog(root, query_timeout=query_timeout)
    service = LookupService(max_batch=max_batch, max_wait_ms=max_wait_ms, device=device, threads=threads,
                            prefilter=prefilter, definitions=lambda served: definitions(served))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await service.close()

    # FastAPI's Swagger page loads its script from a CDN, which this app's own CSP blocks: /api/docs is
    # a plain page built from the same OpenAPI schema instead (no script, nothing fetched elsewhere).
    app = FastAPI(title="defsentflow", lifespan=lifespan, docs_url=None, redoc_url=None)
    follower = AliasFollower(catalog, service)
    app.state.catalog, app.state.lookup, app.state.aliases = catalog, service, follower

    app.add_middleware(SecurityHeaders)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer repeats every rejected input in full (a 100,000-character query
        # came back whole): keep the location, message and a short prefix of the input.
        errors = [{"loc": list(e.get("loc", ())), "msg": short(e.get("msg", "")), "type": e.get("type", ""),
                   **({"input": short(e["input"])} if "input" in e else {})} for e in exc.errors()[:10]]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(NonFiniteError)
    async def _non_finite(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=500)  # a corrupt model or index: nothing served

    @app.exception_handler(CatalogError)
    @app.exception_handler(QueryTimeoutError)
    async def _unreadable(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc).splitlines()[0][:300]}, status_code=503)

    @app.exception_handler(Exception)
    async def _failed(request: Request, exc: Exception) -> JSONResponse:
        # Starlette answers an unhandled error outside the middleware: the headers are set here.
        return JSONResponse({"detail": f"internal error: {type(exc).__name__}: {short(str(exc).splitlines()[0] if str(exc) else '')}"},
                            status_code=500, headers={k.decode(): v.decode() for k, v in SECURITY_HEADERS})

    @app.exception_handler(CatalogLockedError)
    async def _locked(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": f"the catalog is busy: {exc}; try again"}, status_code=503)

    async def revdict(q: str, model: str, k: int, mode: str | None) -> tuple[Any, list]:
        text = q.strip()
        if not text:
            raise HTTPException(422, "the definition is empty")
        try:  # an alias: its holder now, loaded; a model id: as pinned (its changed files are a 409)
            served = await follower.served(model, mode) if is_alias(model) else catalog.resolve(model, mode)
        except UnknownModelError as exc:
            raise HTTPException(404, str(exc)) from None
        try:
            return served, await service.lookup(served, text, k)
        except ArtifactChangedError as exc:  # its files changed after registration: not served until rebuilt
            raise HTTPException(409, f"model {served.model_id}: {str(exc).splitlines()[0][:300]}") from None
        except (OSError, ValueError, RuntimeError) as exc:
            if isinstance(exc, NonFiniteError):
                raise
            raise HTTPException(503, f"model {served.model_id} cannot be served: {type(exc).__name__}: "
                                     f"{short(str(exc).splitlines()[0] if str(exc) else '')}") from None

    # -- JSON ---------------------------------------------------------------------------------
    @app.get("/api/revdict")
    async def api_revdict(q: str = Query(..., min_length=1, max_length=MAX_QUERY_CHARS, description="a definition"),
                          model: str = Query(..., max_length=200, pattern=MODEL_PATTERN,
                                             description="a model id, or an alias (demo@champion)"),
                          k: int = Query(10, ge=1, le=MAX_K),
                          mode: str | None = Query(None, pattern="^(auto|head|cosine|hybrid)$")) -> RevdictAnswer:
        served, hits = await revdict(q, model, k, mode)
        return RevdictAnswer(query=q, model=served.model_id, alias=model if is_alias(model) else None, mode=served.mode,
                             dictionary=served.dictionary,
                             n_entries=served.n_entries,
                             results=[RevdictHit(rank=i + 1, entry=h.entry, score=h.score, definition=h.definition,
                                                 definition_score=h.definition_score) for i, h in enumerate(hits)])

    @app.get("/api/models")
    def api_models() -> list[dict[str, Any]]:
        """Each served index; ``serves``: the aliases that name its model now, and since when."""
        indexes = catalog.indexes()
        serves = catalog.aliases_served(indexes)
        return [{"model": i.model_id, "aliases": list(i.aliases), "mode": i.mode, "dictionary": i.dictionary,
                 "n_entries": i.n_entries, "measured_mrr": i.measured_mrr,
                 "serves": [{"alias": a["alias"], "since": a["since"]} for a in serves[i.model_id]]} for i in indexes]

    @app.get("/api/leaderboard")
    def api_leaderboard(run: str | None = Query(None, max_length=200, pattern=ID_PATTERN)) -> dict[str, Any]:
        return load_leaderboard(catalog.catalog, run_id=run).to_dict() if catalog.catalog.path.is_file() else \
            {"columns": [], "rows": [], "sort_by": None, "sort_note": "no catalog yet", "splits": {}, "gone": {}}

    @app.get("/api/runs")
    def api_runs(limit: int = Query(100, ge=1, le=1000)) -> list[dict[str, Any]]:
        return catalog.runs(limit)

    @app.get("/api/sweeps")
    def api_sweeps() -> list[dict[str, Any]]:
        return [{**s, "points": catalog.sweep_results(s["sweep"])} for s in catalog.sweeps()]

    @app.get("/api/stats")
    def api_stats() -> dict[str, Any]:
        return {"max_batch": service.max_batch, "max_wait_ms": service.max_wait_ms, "threads": service.threads,
                "indexes": service.stats()}

    # -- pages --------------------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/revdict")

    @app.get("/docs", include_in_schema=False)
    def docs() -> RedirectResponse:  # where FastAPI apps usually keep it; here the API's docs sit under /api/
        return RedirectResponse("/api/docs")

    def definitions(served: Any) -> dict[str, list[str]]:
        """Entry -> its definitions, from the index's dictionary dataset ({} for a bare table)."""
        if not served.dictionary:
            return {}
        if served.dictionary not in definitions_cache:
            from defsentflow.dictionary.tables import (
                load_dictionary_table,  # lazy: looked up at call time, so tests can replace it on its own module
            )

            try:
                found = definitions_by_entry(load_dictionary_table(served.dictionary, root=catalog.catalog.root))
            except (KeyError, LookupError, OSError, ValueError):
                found = {}
            definitions_cache[served.dictionary] = found
        return definitions_cache[served.dictionary]

    definitions_cache: dict[str, dict[str, list[str]]] = {}

    @app.get("/api/docs", response_class=HTMLResponse, include_in_schema=False)
    def api_docs() -> HTMLResponse:
        return HTMLResponse(api_page(app.openapi()))

    @app.get("/revdict", response_class=HTMLResponse, include_in_schema=False)
    async def page_revdict(q: str | None = None, model: str | None = None, k: str = "10",
                           beside: str | None = None) -> HTMLResponse:
        indexes = catalog.indexes()
        # the aliases whose model has an index, offered first: the page follows a promotion like the API
        aliases = sorted({a["alias"]: a for held in catalog.aliases_served(indexes).values() for a in held}.values(),
                         key=lambda a: a["alias"])  # once each, though a model may have several indexes
        example = q is None and bool(indexes)
        if example:  # the page opens with a look-up, not an empty box
            q = EXAMPLE_QUERY
        # no model asked for: the one the Model box shows first (an alias's holder, else the first index)
        model = model or (aliases[0]["alias"] if aliases else indexes[0].model_id if indexes else None)
        ctx: dict[str, Any] = {"indexes": indexes, "aliases": aliases, "q": q, "model": model, "k": k, "hits": None,
                               "error": None,
                               "served": None, "max_query": MAX_QUERY_CHARS, "max_k": MAX_K, "example": example,
                               "beside": beside or None, "beside_hits": None, "beside_served": None}
        status = 200
        if q is not None and indexes:
            try:
                kk = int(k)
                if not 1 <= kk <= MAX_K:
                    raise ValueError
            except ValueError:
                ctx["error"], status = f"k must be a whole number from 1 to {MAX_K}", 422
            else:
                if len(q) > MAX_QUERY_CHARS:
                    ctx["error"], status = f"the definition is longer than {MAX_QUERY_CHARS} characters", 422
                    ctx["q"] = q[:MAX_QUERY_CHARS]  # the page does not send the whole rejected input back
                else:
                    try:
                        ctx["served"], ctx["hits"] = await revdict(q, model, kk, None)
                        if beside:
                            ctx["beside_served"], ctx["beside_hits"] = await revdict(q, beside, kk, None)
                    except HTTPException as exc:
                        ctx["error"], status = exc.detail, exc.status_code
        return HTMLResponse(render("revdict.html", here="/revdict", title="Reverse dictionary", **ctx), status)

    @app.get("/leaderboard", response_class=HTMLResponse, include_in_schema=False)
    def page_leaderboard() -> HTMLResponse:
        ctx: dict[str, Any] = {"rows": [], "groups": [], "ident": ("model", "pooling", "method", "run"), "note": ""}
        if catalog.catalog.path.is_file():
            board = load_leaderboard(catalog.catalog)
            groups: dict[str, list[dict[str, str]]] = {}
            for c in board.columns:  # dev figures, then test, then train: one column group each
                split = board.splits.get(c, "test")
                # the group says the split; Spearman is what an STS heading without a metric shows
                short = " ".join(w for w in c.split("_") if w not in (split, "spearman")) or c
                groups.setdefault(split, []).append({"name": c, "short": short})
            ctx["groups"] = [{"name": g, "columns": cols} for g, cols in groups.items()]
            reports = {r["run_id"] for r in catalog.runs() if r.get("has_report")}
            ctx["rows"] = [{**r, "run_href": (f"/runs/{quote(r['run_id'])}/report/report.html" if r["run_id"] in reports
                                              else f"/runs#run-{quote(r['run_id'])}") if r.get("run_id") else None}
                           for r in board.rows]
            ctx["note"] = board.sort_note
        return HTMLResponse(render("leaderboard.html", here="/leaderboard", title="Leaderboard", **ctx))

    @app.get("/runs", response_class=HTMLResponse, include_in_schema=False)
    def page_runs() -> HTMLResponse:
        return HTMLResponse(render("runs.html", here="/runs", title="Runs", runs=catalog.runs()))

    @app.get("/runs/{run_id}/report", include_in_schema=False)
    def report_page(run_id: str) -> RedirectResponse:
        return RedirectResponse(f"/runs/{quote(run_id)}/report/report.html")

    @app.get("/runs/{run_id}/report/{name:path}", include_in_schema=False)
    def report_file(run_id: str, name: str) -> Response:
        found = catalog.report_file(run_id, name)
        if found is None:
            raise HTTPException(404, f"no report file {short(name)!r} for run {short(run_id)!r}")
        if name == "report.html":  # served: a way back to the app above the report
            back = f'<p><a href="/runs#run-{quote(run_id)}">&larr; Runs</a> &middot; <a href="/revdict">Reverse dictionary</a></p>'
            return HTMLResponse(found[0].read_text(encoding="utf-8").replace("<body>", "<body>\n" + back, 1))
        return FileResponse(found[0], media_type=found[1])

    @app.get("/sweeps", response_class=HTMLResponse, include_in_schema=False)
    def page_sweeps() -> HTMLResponse:
        sweeps = []
        for s in catalog.sweeps():
            points = catalog.sweep_results(s["sweep"])
            cols = [c for c in (points[0] if points else {}) if any(p.get(c) is not None for p in points)]
            numeric = [c for c in cols if any(isinstance(p.get(c), (int, float)) for p in points)]
            sweeps.append({**s, "columns": cols, "rows": [[p.get(c) for c in cols] for p in points], "numeric": numeric})
        return HTMLResponse(render("sweeps.html", here="/sweeps", title="Sweeps", sweeps=sweeps))

    return app
