"""The ``defsentflow`` command line.

Each command group lives in its own module with a ``register(subparsers)`` function; heavy
imports (torch, transformers, prefect) happen inside the handlers so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

__all__ = ["main", "build_parser"]

# Modules under defsentflow.cli, each registering one or more sub-commands.
_GROUPS = ("catalog", "ingest", "encode", "train", "pretrain", "evaluate", "harvest", "origin", "pipeline", "report", "sweep")


class UserError(Exception):
    """An error caused by input (a path, a config, a record): printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="defsentflow", description=__doc__.splitlines()[0])
    parser.add_argument("--home", help="data root (default: $DEFSENTFLOW_HOME or ./storage)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _GROUPS:
        try:
            module = importlib.import_module(f"defsentflow.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"defsentflow.cli.{name}":
                continue  # group not built yet
            raise
        module.register(sub)
    return parser


def _quiet_transformers() -> None:
    """transformers 5 prints a progress bar for every weight load; keep the terminal for our bars."""
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main(argv: list[str] | None = None) -> int:
    import os

    # Idle OpenMP threads sleep instead of spinning: on a small, shared machine (2 cores running a
    # Prefect server, a flow and torch) spinning threads slowed training about 6x.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpcore", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _quiet_transformers()
    if args.home:
        import os

        os.environ["DEFSENTFLOW_HOME"] = args.home
    if args.quiet:
        import os

        os.environ["DEFSENTFLOW_QUIET"] = "1"
    try:
        rc = args.func(args)
    except UserError as exc:
        print(f"defsentflow: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, PermissionError, IsADirectoryError, ValueError) as exc:
        print(f"defsentflow: error: {exc}", file=sys.stderr)
        return 2
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
