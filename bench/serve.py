"""Reverse-dictionary serving benchmark: micro-batched look-ups against one request at a time.

    python bench/serve.py [--home DIR] [--model minilm] [--dictionary oewn] [--clients 16] [--queries 2000]
                          [--threads N] [--repeat 3] [--client asyncio|httpx]

Uses the data root ``--home`` (default ``$DEFSENTFLOW_HOME`` or ``./storage``). When the dictionary
is not there it is ingested from ``--oewn`` (default ``../shared/data/oewn/yaml``), and when the
model has no index over it one is built (cosine mode; the full OEWN, 127k entries, encodes about
185k definitions: minutes on a CPU). Then ``defsentflow serve`` is started twice on free
loopback ports: batched (``--max-batch 32``) and as the baseline, one request at a time
(``--max-batch 1``), both with ``--threads`` torch/faiss threads (default: the CPU cores).
``--clients`` concurrent clients, each one keep-alive HTTP/1.1 connection on asyncio streams,
send test-split definitions of the dictionary to ``/api/revdict`` (each client one request at a
time, the next as soon as the last returns) until ``--queries`` are answered (the baseline gets
``--baseline-queries``). With ``--repeat N`` the two servers are measured N times, alternately,
and the figures compared are the medians. Both servers must return the same top entry for every
query they share.

Each measurement prints p50/p95/p99 latency, queries per second and the load average, then
where a request's time went: per batch, the seconds in encoding and in the search (from
the server's ``/api/stats``); per request, queueing before its batch started, its batch, and the
rest (HTTP, JSON, the event loop), and the client's own CPU per request. The last line is
``ratio=<batched queries per second / baseline's>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _prepare(args: argparse.Namespace) -> list[str]:
    """Ingest the dictionary and build the index if missing; return the query definitions."""
    from defsentflow.dictionary.tables import load_dictionary_table
    from defsentflow.evaluation.suite import known_model
    from defsentflow.revdict import build_revdict_index
    from defsentflow.storage import Catalog

    try:
        table = load_dictionary_table(args.dictionary)
    except (KeyError, LookupError, FileNotFoundError):
        if not Path(args.oewn).is_dir():
            raise SystemExit(f"dictionary {args.dictionary!r} is not in {os.environ['DEFSENTFLOW_HOME']} and "
                             f"--oewn {args.oewn} is not a directory") from None
        print(f"ingesting {args.oewn} as {args.dictionary!r} ...", flush=True)
        subprocess.run([sys.executable, "-m", "defsentflow.cli", "--quiet", "ingest", "dictionary", "--name",
                        args.dictionary, "--source", "oewn", args.oewn], check=True)
        table = load_dictionary_table(args.dictionary)
    t0 = time.perf_counter()
    try:  # a catalog id (pst-...) is its directory; a name this machine has no model for is refused here
        model_path = known_model(Catalog(create=False), args.model)[1]
    except ValueError as exc:
        raise SystemExit(f"bench/serve.py: {exc}") from None
    index = build_revdict_index(model_path, args.dictionary, mode="cosine", device="cpu")
    took = time.perf_counter() - t0
    print(f"index: {index.meta['n_entries']:,} entries of {args.dictionary!r}, {index.meta['mode']} mode "
          f"(ready in {took:.0f}s) at {index.path}", flush=True)
    splits = table.column("split").to_pylist() if "split" in table.column_names else ["test"] * table.num_rows
    defs = [d for d, s in zip(table.column("definition").to_pylist(), splits) if s == "test"]
    rng = np.random.default_rng(args.seed)
    return [defs[i][:500] for i in rng.choice(len(defs), size=min(len(defs), args.queries), replace=False)]


class _Server:
    """``defsentflow serve`` in a child process on a free loopback port."""

    def __init__(self, max_batch: int, threads: int, max_wait_ms: float, search: str = "auto"):
        self.port = _free_port()
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "serve", "--port", str(self.port),
                                      "--max-batch", str(max_batch), "--max-wait-ms", str(max_wait_ms),
                                      "--threads", str(threads), "--search", search],
                                     env=env, cwd=REPO,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{self.port}"

    def wait(self, timeout: float = 120.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(self.url + "/api/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        raise SystemExit("server did not start in time")

    def stats(self) -> dict:
        import httpx

        found = list(httpx.get(self.url + "/api/stats", timeout=10).json()["indexes"].values())
        return found[0] if found else {}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class _Connection:
    """One keep-alive HTTP/1.1 connection on asyncio streams: a load generator that costs the client
    about a tenth of httpx's CPU per request, so that on a small machine the clients do not starve
    the server they measure (both servers are measured with the same client)."""

    def __init__(self, port: int):
        self.port, self.reader, self.writer = port, None, None

    async def get(self, target: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
        length = {k.strip().lower(): v.strip() for k, v in headers.items()}.get("content-length")
        if length is None:
            raise RuntimeError(f"no content-length in the answer to {target}: {lines[0]}")
        return int(lines[0].split()[1]), await self.reader.readexactly(int(length))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _load(url: str, model: str, queries: list[str], clients: int, k: int,
                client: str = "asyncio") -> tuple[list[float], list[tuple[str, float]], float]:
    """Closed loop: ``clients`` workers, each sending its next query when the last is answered."""
    from urllib.parse import urlencode

    import httpx

    latencies = [0.0] * len(queries)
    top: list[tuple[str, float]] = [("", 0.0)] * len(queries)
    nxt = iter(range(len(queries)))
    port = int(url.rsplit(":", 1)[1])

    async def worker(get) -> None:
        for i in nxt:
            target = "/api/revdict?" + urlencode({"q": queries[i], "model": model, "k": k})
            t0 = time.perf_counter()
            status, body = await get(target)
            latencies[i] = time.perf_counter() - t0
            if status != 200:
                raise RuntimeError(f"HTTP {status} for {target}: {body[:300]!r}")
            best = json.loads(body)["results"][0]
            top[i] = (best["entry"], best["score"])

    if client == "httpx":  # the general-purpose client, for comparison
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as hc:
            async def get(target: str) -> tuple[int, bytes]:
                r = await hc.get(target)
                return r.status_code, r.content

            t0 = time.perf_counter()
            await asyncio.gather(*(worker(get) for _ in range(clients)))
            return latencies, top, time.perf_counter() - t0
    conns = [_Connection(port) for _ in range(clients)]
    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(c.get) for c in conns))
        return latencies, top, time.perf_counter() - t0
    finally:
        for c in conns:
            c.close()


def _start(max_batch: int, args: argparse.Namespace, queries: list[str]) -> _Server:
    import httpx

    server = _Server(max_batch, args.threads, args.max_wait_ms, args.search)
    server.wait()
    for q in queries[:4]:  # load the index and the encoder before the clock starts
        httpx.get(server.url + "/api/revdict", params={"q": q, "model": args.model, "k": args.k}, timeout=300)
    return server


def _measure(name: str, server: _Server, args: argparse.Namespace,
             queries: list[str]) -> tuple[float, float, list[tuple[str, float]]]:
    """One closed-loop load; prints latency, throughput and where a request's time went."""
    before, cpu0 = server.stats(), time.process_time()
    lat, top, wall = asyncio.run(_load(server.url, args.model, queries, args.clients, args.k, args.client))
    client_cpu = time.process_time() - cpu0
    after = server.stats()
    d = {key: after.get(key, 0) - before.get(key, 0) for key in
         ("batches", "items", "seconds", "queued_seconds", "encode_seconds", "search_seconds")}
    ms = np.asarray(lat) * 1000
    qps = len(queries) / wall
    n, b = max(1, d["items"]), max(1, d["batches"])
    batch_ms = 1000 * d["seconds"] / b
    queued_ms = 1000 * d["queued_seconds"] / n
    print(f"{name}: clients={args.clients} queries={len(queries)} p50={np.percentile(ms, 50):.1f}ms "
          f"p95={np.percentile(ms, 95):.1f}ms p99={np.percentile(ms, 99):.1f}ms qps={qps:.1f} wall={wall:.1f}s "
          f"load={os.getloadavg()[0]:.2f}", flush=True)
    print(f"  per batch (mean of {d['batches']}, {d['items'] / b:.1f} queries): encode "
          f"{1000 * d['encode_seconds'] / b:.1f} ms, search {1000 * d['search_seconds'] / b:.1f} ms; "
          f"per request: latency {ms.mean():.1f} ms = queued {queued_ms:.1f} + its batch {batch_ms:.1f} "
          f"+ HTTP, JSON and event loop {ms.mean() - queued_ms - batch_ms:.1f} ms; client CPU "
          f"{1000 * client_cpu / len(queries):.2f} ms per request", flush=True)
    return qps, float(np.percentile(ms, 95)), top
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", default=None, help="data root (default: $DEFSENTFLOW_HOME or ./storage)")
    ap.add_argument("--model", default="minilm", help="model (default: the bundled MiniLM)")
    ap.add_argument("--dictionary", default="oewn")
    ap.add_argument("--oewn", default=str(REPO.parent / "shared" / "data" / "oewn" / "yaml"),
                    help="OEWN yaml/ directory, ingested when --dictionary is missing")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--baseline-queries", type=int, default=400, help="queries sent to the one-at-a-time server")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch/faiss threads of each server")
    ap.add_argument("--max-batch", type=int, default=32, help="the batched server's --max-batch")
    ap.add_argument("--max-wait-ms", type=float, default=10.0, help="the batched server's --max-wait-ms")
    ap.add_argument("--search", choices=("auto", "faiss"), default="auto", help="both servers' --search")
    ap.add_argument("--client", choices=("asyncio", "httpx"), default="asyncio",
                    help="load generator: one keep-alive connection per client on asyncio streams (default), "
                         "or httpx's AsyncClient (heavier: on 2 cores it takes CPU from the server)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure each server this many times, alternating (the ratio is of the medians)")
    ap.add_argument("--skip-baseline", action="store_true", help="measure the batched server only (no ratio)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.home:
        os.environ["DEFSENTFLOW_HOME"] = str(Path(args.home).resolve())
    os.environ.setdefault("DEFSENTFLOW_HOME", str(REPO / "storage"))
    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the CLI sets it: no spinning on shared cores
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    queries = _prepare(args)
    print(f"data root {os.environ['DEFSENTFLOW_HOME']}, model {args.model}, cpus {os.cpu_count()}, "
          f"server threads {args.threads}, --search {args.search}, {args.client} client, "
          f"{len(queries)} test-split definitions as queries",
          flush=True)
    base_q = queries[: args.baseline_queries]
    label = f"batched (micro-batches of up to {args.max_batch}, wait <= {args.max_wait_ms:g} ms)"
    servers = {"batched": _start(args.max_batch, args, queries)}
    try:
        if not args.skip_baseline:
            servers["baseline"] = _start(1, args, queries)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
        tops: dict[str, list[tuple[str, float]]] = {}
        for r in range(args.repeat):
            for name in ("baseline", "batched"):
                if name in servers:
                    qs = base_q if name == "baseline" else queries
                    title = "baseline (one request at a time)" if name == "baseline" else label
                    qps, p95, tops[name] = _measure(title + (f" [{r + 1}/{args.repeat}]" if args.repeat > 1 else ""),
                                                    servers[name], args, qs)
                    runs[name].append((qps, p95))
    finally:
        for server in servers.values():
            server.stop()
    med = {name: (float(np.median([q for q, _ in v])), float(np.median([p for _, p in v]))) for name, v in runs.items()}
    if args.skip_baseline:
        print(json.dumps({"qps": round(med["batched"][0], 1), "p95_ms": round(med["batched"][1], 1)}))
        return 0
    # padding a batch changes the last bits of a vector: equal entries, or a tie within 1e-4
    same = sum(a[0] == b[0] or abs(a[1] - b[1]) < 1e-4 for a, b in zip(tops["baseline"], tops["batched"]))
    print(f"same top entry (or a tie) on {same}/{len(base_q)} shared queries")
    if same != len(base_q):
        print("error: batched and one-at-a-time servers disagree", file=sys.stderr)
        return 1
    print(json.dumps({"qps": round(med["batched"][0], 1), "p95_ms": round(med["batched"][1], 1),
                      "baseline_qps": round(med["baseline"][0], 1), "repeats": args.repeat}))
    print(f"ratio={med['batched'][0] / med['baseline'][0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
