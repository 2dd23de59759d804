"""Reverse-dictionary serving benchmark: micro-batched look-ups against one request at a time.

    python bench/serve.py [--home DIR] [--model minilm] [--dictionary oewn] [--clients 16] [--queries 2000]

Uses the data root ``--home`` (default ``$DEFSENTFLOW_HOME`` or ``./storage``). When the dictionary
is not there it is ingested from ``--oewn`` (default ``../shared/data/oewn/yaml``), and when the
model has no index over it one is built (cosine mode; the full OEWN, 127k entries, encodes about
185k definitions: minutes on a CPU). Then ``defsentflow serve`` is started twice on a free
loopback port: batched (``--max-batch 32``) and as the baseline, one request at a time
(``--max-batch 1``). ``--clients`` concurrent HTTP clients send test-split definitions of the
dictionary to ``/api/revdict`` (each client one request at a time, the next as soon as the last
returns) until ``--queries`` are answered (the baseline gets ``--baseline-queries``). Both
servers must return the same top entry for every query they share. The last line is
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
    from defsentflow.revdict import build_revdict_index

    try:
        table = load_dictionary_table(args.dictionary)
    except (KeyError, LookupError, FileNotFoundError):
        if not Path(args.oewn).is_dir():
            raise SystemExit(f"dictionary {args.dictionary!r} is not in {os.environ['DEFSENTFLOW_HOME']} and "
                             f"--oewn {args.oewn} is not a directory")
        print(f"ingesting {args.oewn} as {args.dictionary!r} ...", flush=True)
        subprocess.run([sys.executable, "-m", "defsentflow.cli", "--quiet", "ingest", "dictionary", "--name",
                        args.dictionary, "--source", "oewn", args.oewn], check=True)
        table = load_dictionary_table(args.dictionary)
    t0 = time.perf_counter()
    index = build_revdict_index(args.model, args.dictionary, mode="cosine", device="cpu")
    took = time.perf_counter() - t0
    print(f"index: {index.meta['n_entries']:,} entries of {args.dictionary!r}, {index.meta['mode']} mode "
          f"(ready in {took:.0f}s) at {index.path}", flush=True)
    splits = table.column("split").to_pylist() if "split" in table.column_names else ["test"] * table.num_rows
    defs = [d for d, s in zip(table.column("definition").to_pylist(), splits) if s == "test"]
    rng = np.random.default_rng(args.seed)
    return [defs[i][:500] for i in rng.choice(len(defs), size=min(len(defs), args.queries), replace=False)]


class _Server:
    """``defsentflow serve`` in a child process on a free loopback port."""

    def __init__(self, max_batch: int, threads: int, max_wait_ms: float):
        self.port = _free_port()
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "serve", "--port", str(self.port),
                                      "--max-batch", str(max_batch), "--max-wait-ms", str(max_wait_ms)],
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

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def _load(url: str, model: str, queries: list[str], clients: int,
                k: int) -> tuple[list[float], list[tuple[str, float]], float]:
    """Closed loop: ``clients`` workers, each sending its next query when the last is answered."""
    import httpx

    latencies = [0.0] * len(queries)
    top: list[tuple[str, float]] = [("", 0.0)] * len(queries)
    nxt = iter(range(len(queries)))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def worker(client: httpx.AsyncClient) -> None:
        for i in nxt:
            t0 = time.perf_counter()
            r = await client.get("/api/revdict", params={"q": queries[i], "model": model, "k": k})
            latencies[i] = time.perf_counter() - t0
            r.raise_for_status()
            best = r.json()["results"][0]
            top[i] = (best["entry"], best["score"])

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(clients)))
        wall = time.perf_counter() - t0
    return latencies, top, wall


def _measure(name: str, max_batch: int, args: argparse.Namespace,
             queries: list[str]) -> tuple[float, list[tuple[str, float]]]:
    import httpx

    server = _Server(max_batch, args.threads, args.max_wait_ms)
    try:
        server.wait()
        for q in queries[:4]:  # load the index and the encoder before the clock starts
            httpx.get(server.url + "/api/revdict", params={"q": q, "model": args.model, "k": args.k}, timeout=300)
        lat, top, wall = asyncio.run(_load(server.url, args.model, queries, args.clients, args.k))
        stats = httpx.get(server.url + "/api/stats", timeout=10).json()
    finally:
        server.stop()
    ms = np.asarray(lat) * 1000
    qps = len(queries) / wall
    batches = [v for v in stats["indexes"].values()]
    mean_batch = batches[0]["mean_batch"] if batches else 0
    busy = batches[0]["seconds"] if batches else 0.0  # includes the warm-up look-ups
    print(f"{name}: clients={args.clients} queries={len(queries)} p50={np.percentile(ms, 50):.1f}ms "
          f"p95={np.percentile(ms, 95):.1f}ms p99={np.percentile(ms, 99):.1f}ms qps={qps:.1f} "
          f"wall={wall:.1f}s mean_batch={mean_batch} encode+search={busy:.1f}s", flush=True)
    return qps, top


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
    ap.add_argument("--max-wait-ms", type=float, default=10.0, help="the batched server's --max-wait-ms")
    ap.add_argument("--skip-baseline", action="store_true", help="measure the batched server only (no ratio)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.home:
        os.environ["DEFSENTFLOW_HOME"] = str(Path(args.home).resolve())
    os.environ.setdefault("DEFSENTFLOW_HOME", str(REPO / "storage"))
    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the CLI sets it: no spinning on shared cores
    queries = _prepare(args)
    print(f"data root {os.environ['DEFSENTFLOW_HOME']}, model {args.model}, cpus {os.cpu_count()}, "
          f"server threads {args.threads}, {len(queries)} test-split definitions as queries", flush=True)
    base_q = queries[: args.baseline_queries]
    if args.skip_baseline:
        _measure(f"batched (micro-batches of up to 32, wait <= {args.max_wait_ms:g} ms)", 32, args, queries)
        return 0
    qps_base, top_base = _measure("baseline (one request at a time)", 1, args, base_q)
    qps, top = _measure(f"batched (micro-batches of up to 32, wait <= {args.max_wait_ms:g} ms)", 32, args, queries)
    # padding a batch changes the last bits of a vector: equal entries, or a tie within 1e-4
    same = sum(a[0] == b[0] or abs(a[1] - b[1]) < 1e-4 for a, b in zip(top_base, top))
    print(f"same top entry (or a tie) on {same}/{len(base_q)} shared queries")
    if same != len(base_q):
        print("error: batched and one-at-a-time servers disagree", file=sys.stderr)
        return 1
    print(json.dumps({"qps": round(qps, 1), "baseline_qps": round(qps_base, 1)}))
    print(f"ratio={qps / qps_base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
