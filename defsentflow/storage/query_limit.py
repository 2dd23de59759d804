"""A time limit on one DuckDB statement: a timer thread interrupts the connection when it passes."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import duckdb

__all__ = ["QueryTimeoutError", "time_limit"]


class QueryTimeoutError(ValueError):
    """A read ran past its time limit and was interrupted."""


@contextlib.contextmanager
def time_limit(con: duckdb.DuckDBPyConnection, seconds: float | None) -> Iterator[None]:
    """Interrupt ``con`` (from a timer thread) once ``seconds`` have passed (no limit: None or 0)."""
    if not seconds:
        yield
        return
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield
    except (duckdb.InterruptException, duckdb.Error, RuntimeError) as exc:
        if fired.is_set():
            raise QueryTimeoutError(f"query interrupted after its time limit of {seconds:g}s "
                                    "(raise it with --timeout / --query-timeout)") from exc
        raise
    finally:
        timer.cancel()
