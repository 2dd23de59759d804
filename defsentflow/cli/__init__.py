"""The ``defsentflow`` command line.

Each command group lives in its own module with a ``register(subparsers)`` function; heavy
imports (torch, transformers, prefect) happen inside the handlers so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import signal
import sys
import threading

__all__ = ["main", "build_parser", "check_count", "check_flag_limits", "exit_on_sigterm", "identifier",
           "writes_data_root"]

# Modules under defsentflow.cli, each registering one or more sub-commands.
_GROUPS = ("catalog", "ingest", "encode", "train", "pretrain", "evaluate", "harvest", "origin", "pipeline", "report",
           "sweep", "serve", "claims", "export", "registry")


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


def check_flag_limits(args: argparse.Namespace) -> None:
    """Every count or time flag given (``--workers``, ``--local-workers``, ``--max-wait-ms``, ...) within
    the bounds of :data:`defsentflow.limits.FLAG_LIMITS`, the same table the config sections read: a
    :class:`UserError` (one line) otherwise."""
    import math

    from defsentflow.limits import FLAG_LIMITS, LIMITS

    for flag, (limit, minimum) in FLAG_LIMITS.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"{flag} must be a finite number, got {value}")
        if value < minimum:
            raise UserError(f"{flag} must be >= {minimum:g}, got {value:g}")
        if value > LIMITS[limit]:
            raise UserError(f"{flag} must be <= {LIMITS[limit]}, got {value:g}")


DESCRIPTION = ("defsentflow turns dictionaries and raw text into sentence encoders (DefSent, DefSent+ with "
               "Progressive Separate Training); every stage is a cached, resumable Prefect flow and every run, "
               "artifact and metric is in a DuckDB catalog. 'defsentflow COMMAND --help' shows a command's options.")


def build_parser() -> argparse.ArgumentParser:
    from defsentflow import __version__

    parser = argparse.ArgumentParser(prog="defsentflow", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"defsentflow {__version__}")
    parser.add_argument("--home", help="data root (a config's home: wins; else --home, $DEFSENTFLOW_HOME, else the "
                                       "checkout's storage/ or ~/.local/share/defsentflow; see README 'Data root')")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--lock-timeout", type=float, metavar="SECONDS",
                        help="how long a command waits for the catalog while another process (a `duckdb` shell) holds "
                             "it, then ends with one error line naming the holder (default 120; $DEFSENTFLOW_LOCK_TIMEOUT)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _GROUPS:
        importlib.import_module(f"defsentflow.cli.{name}").register(sub)
    return parser


# Commands that only read the data root (the others print the root they use: defsentflow.cli.home).
_READERS = {"sql", "verify", "runs", "datasets", "leaderboard", "best-model", "serve", "export", "encode", "aliases"}


def writes_data_root(args: argparse.Namespace) -> bool:
    """Whether the parsed command may write the data root."""
    if args.command in _READERS and not getattr(args, "cache", False) and not getattr(args, "retire", None):
        return False
    if args.command == "eval" and getattr(args, "no_record", False):
        return False
    return not (args.command == "sweep" and args.sweep_command in ("show", "table"))


def _quiet_transformers() -> None:
    """transformers 5 prints a progress bar for every weight load; keep the terminal for our bars."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main(argv: list[str] | None = None) -> int:
    # Idle OpenMP threads sleep instead of spinning: on a small, shared machine (2 cores running a
    # Prefect server, a flow and torch) spinning threads slowed training about 6x.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if threading.current_thread() is threading.main_thread():  # signals are set in the main thread only
        signal.signal(signal.SIGTERM, exit_on_sigterm)  # `timeout`, `kill`: a recorded run closes as interrupted
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpcore", "urllib3", "filelock", "faiss", "faiss.loader", "matplotlib", "PIL"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _quiet_transformers()
    if args.home:
        os.environ["DEFSENTFLOW_HOME"] = args.home
    if args.quiet:
        os.environ["DEFSENTFLOW_QUIET"] = "1"
    try:
        check_flag_limits(args)
        if args.lock_timeout is not None:  # every catalog open of this command (and of the workers it starts)
            os.environ["DEFSENTFLOW_LOCK_TIMEOUT"] = repr(args.lock_timeout)
        if writes_data_root(args):
            from defsentflow.cli.home import config_home, use_data_root

            use_data_root(*config_home(getattr(args, "config", None)))
        rc = args.func(args)
    except BrokenPipeError:  # `defsentflow sql ... | head`: the reader left, nothing to report
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        return 1
    except (UserError, OSError, ValueError) as exc:  # bad paths, files, models, configs: no traceback
        return _fail(exc)
    except RuntimeError as exc:  # the catalog held by another process past --lock-timeout: one line too
        from defsentflow.storage.locks import CatalogLockedError

        if not isinstance(exc, CatalogLockedError):
            raise
        return _fail(exc)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (defsentflow.cli.compute): the command's work is cancelled
        print("defsentflow: interrupted: queued tasks cancelled, running candidates stop at their next checkpoint; "
              "the same command resumes", file=sys.stderr)
        return 130
    return int(rc or 0)


def exit_on_sigterm(signum: int, frame: object) -> None:
    """Python dies of ``SIGTERM`` without unwinding; exiting instead lets the run being recorded close
    as ``interrupted`` (:func:`defsentflow.storage.runs.recorded_run`) rather than stay ``running``."""
    raise SystemExit(128 + signum)


def _fail(exc: BaseException) -> int:
    """Print an input error as one line (control characters escaped) and return exit status 2."""
    from defsentflow.cli.table import printable

    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:  # a full disk: which disk, which folder
        from defsentflow.storage.paths import disk_full

        exc = OSError(disk_full(exc.filename or os.environ.get("DEFSENTFLOW_HOME") or "."))
    text = " ".join(str(exc).split("\n")).strip() or type(exc).__name__
    print(f"defsentflow: error: {printable(text)}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
