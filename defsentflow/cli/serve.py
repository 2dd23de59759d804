"""``defsentflow serve``: the web app (reverse dictionary, leaderboard, runs, sweeps) on 127.0.0.1."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve a read-only web app over the catalog (reverse dictionary, leaderboard, runs)",
                       description="A web app over the data root's catalog: /revdict (type a definition, pick a model, "
                                   "see its top-k entries from the model's index), /leaderboard, /runs (with reports "
                                   "and plots), /sweeps; JSON under /api/ (/api/revdict?q=...&model=...&k=..., "
                                   "/api/leaderboard, /api/runs, /api/models; their schema at /api/docs). model= takes "
                                   "an id or an alias (demo@champion), which follows promotions and rollbacks without a "
                                   "restart. Indexes are those `defsentflow revdict` built; nothing is written. Concurrent "
                                   "look-ups are encoded in batches.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    p.add_argument("--max-batch", type=int, default=32, help="most look-ups encoded together (1: one at a time)")
    p.add_argument("--max-wait-ms", type=float, default=10.0,
                   help="the longest a look-up waits for others to share its batch, when the last batch was "
                        "bigger than what is waiting (default 10 ms; a lone client never waits)")
    p.add_argument("--device", default="cpu", help="where query encoders run (default cpu)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch and faiss threads of the look-up worker (default: the CPU cores)")
    p.add_argument("--search", choices=("auto", "faiss"), default="auto",
                   help="exact top-k of a batch: auto (default) scores it on a bf16 copy of the index first where "
                        "the CPU has bf16 dot products and rescores the candidates exactly, falling back to faiss "
                        "for any query it cannot prove exact; faiss: faiss's flat search only")
    p.add_argument("--query-timeout", type=float, default=30.0, metavar="S",
                   help="interrupt a catalog read after S seconds (default 30): no page holds the catalog from a run")
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import os

    from defsentflow.cli import UserError

    if args.max_batch < 1:
        raise UserError("--max-batch must be >= 1")
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be >= 1, got {args.threads}")
    if not 0 < args.query_timeout <= 86400:
        raise UserError(f"--query-timeout must be in (0, 86400] seconds, got {args.query_timeout}")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be 0..65535, got {args.port}")
    os.environ["DEFSENTFLOW_QUIET"] = "1"  # no progress bars per request
    from defsentflow.encoders.loading import pick_device
    from defsentflow.serve import create_app
    from defsentflow.serve.server import PortInUseError, listen, run_server
    from defsentflow.storage import Catalog

    try:  # every flag is checked before the port is taken: a bad --device is its own line, busy port or not
        pick_device(args.device)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    try:
        sock = listen(args.host, args.port)  # then the port: one line when it is in use, before anything is said
    except PortInUseError as exc:
        raise UserError(exc.strerror) from None

    cat = Catalog(reader=True)  # read-only: never creates the catalog or changes its schema
    if not cat.path.is_file():
        print(f"no catalog at {cat.path} yet: the pages stay empty until a run writes one")
    app = create_app(query_timeout=args.query_timeout, max_batch=args.max_batch, max_wait_ms=args.max_wait_ms, device=args.device, threads=args.threads,
                     prefilter=None if args.search == "auto" else False)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {args.host}: anyone who can reach it can read the catalog")
    port = sock.getsockname()[1]
    print(f"serving {cat.root} on http://{args.host}:{port}/ (Ctrl-C stops)", flush=True)
    run_server(app, args.host, port, sock)
    return 0
