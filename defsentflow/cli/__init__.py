"""The ``defsentflow`` command line.

Each command group lives in its own module with a ``register(subparsers)`` function; heavy
imports (torch, transformers, prefect) happen inside the handlers so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

__all__ = ["main", "build_parser", "check_count", "identifier"]

# Modules under defsentflow.cli, each registering one or more sub-commands.
_GROUPS = ("catalog", "ingest", "encode", "train", "pretrain", "evaluate", "harvest", "origin", "pipeline", "report",
           "sweep", "serve", "claims", "export")


class UserError(Exception):
    """An error caused by input (a path, a config, a record): printed without a traceback."""


def identifier(what: str):
    """An argparse ``type=`` that accepts only a safe identifier (run id, dataset or corpus name)."""

    def check(value: str) -> str:
        from defsentflow.storage.identifiers import check_identifier

        try:
            return check_identifier(value, what)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    check.__name__ = what  # argparse names the type in its message
    return check


def check_count(value: int | None, flag: str, maximum: int, minimum: int = 1) -> None:
    """A :class:`UserError` (one line) unless ``value`` is None or in ``minimum..maximum``."""
    if value is not None and value < minimum:
        raise UserError(f"{flag} must be >= {minimum}, got {value}")
    if value is not None and value > maximum:
        raise UserError(f"{flag} must be <= {maximum}, got {value}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="defsentflow", description=__doc__.splitlines()[0])
    parser.add_argument("--home", help="data root (default: $DEFSENTFLOW_HOME or ./storage)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _GROUPS:
        importlib.import_module(f"defsentflow.cli.{name}").register(sub)
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
    for noisy in ("httpx", "httpcore", "urllib3", "filelock", "faiss", "faiss.loader", "matplotlib", "PIL"):
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
    except BrokenPipeError:  # `defsentflow sql ... | head`: the reader left, nothing to report
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        return 1
    except (UserError, OSError, ValueError) as exc:  # bad paths, files, models, configs: no traceback
        return _fail(exc)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (defsentflow.cli.compute): the command's work is cancelled
        print("defsentflow: interrupted: queued tasks cancelled, running candidates stop at their next checkpoint; "
              "the same command resumes", file=sys.stderr)
        return 130
    return int(rc or 0)


def _fail(exc: BaseException) -> int:
    """Print an input error as one line (control characters escaped) and return exit status 2."""
    from defsentflow.cli.table import printable

    text = " ".join(str(exc).split("\n")).strip() or type(exc).__name__
    print(f"defsentflow: error: {printable(text)}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
