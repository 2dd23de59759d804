"""Advisory file locks: two runs never write the same artifact at once, a catalog rebuild never runs
beside a writer (``locks/catalog-writers.lock``: writers hold it shared while a writing connection is
open, ``catalog rebuild`` holds it alone for its whole run), and reads never starve a writer
(``locks/catalog-turn.lock``: a writer that finds the catalog held takes it alone while it waits; a
read gives way to it before opening, so reads that overlap one another end and the writer gets in);
and what a command says while another process holds the DuckDB catalog (:func:`lock_wait_message`),
for how long it waits (:func:`lock_timeout_s`: ``--lock-timeout``, ``$DEFSENTFLOW_LOCK_TIMEOUT``) and
who held it when the wait ran out (:func:`lock_holder`)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TypeVar

from defsentflow.storage.paths import OutsideRootError, data_root, root_place

__all__ = ["CatalogLockedError", "LOCK_ADVICE", "LOCK_NOTICE_S", "LOCK_TIMEOUT_ENV", "TURN_LOCK", "WRITER_LOCK", "artifact_lock",
           "connect_waiting", "give_way_to_writer", "lock_holder", "lock_timeout_s", "lock_wait_message", "waited_s",
           "writer_shared", "writer_turn", "writers_excluded"]

log = logging.getLogger(__name__)
T = TypeVar("T")

WRITER_LOCK = "catalog-writers.lock"
TURN_LOCK = "catalog-turn.lock"
# Data roots whose writer lock this process holds alone (a rebuild): its own opens pass.
_EXCLUSIVE: set[str] = set()


class CatalogLockedError(RuntimeError):
    """The catalog stayed locked by another process for longer than the timeout."""


LOCK_NOTICE_S = 1.0
"""A wait for the catalog longer than this is said on stderr (short waits are other runs' transactions)."""
LOCK_TIMEOUT_ENV = "DEFSENTFLOW_LOCK_TIMEOUT"
"""The longest a catalog open waits for another process, in seconds (``defsentflow --lock-timeout``); default 120."""
_WAITED = [0.0]  # seconds this process waited for the catalog file another process held (the run summary names them)


def lock_timeout_s(default: float = 120.0) -> float:
    """The catalog's lock wait limit: ``$DEFSENTFLOW_LOCK_TIMEOUT`` (set by ``--lock-timeout``), else ``default``."""
    try:
        return float(os.environ.get(LOCK_TIMEOUT_ENV) or default)
    except ValueError:
        return default


def waited_s() -> float:
    """Seconds this process has waited for the catalog file so far (subtract an earlier reading)."""
    return _WAITED[0]


def lock_holder(exc: BaseException) -> str:
    """Who holds the file, from DuckDB's lock error: ``PID 123 (duckdb shell.db)``, else ``another process``."""
    found = re.search(r"held in (.*?) \(PID (\d+)\)", str(exc))
    if not found:
        return "another process"
    try:
        with open(f"/proc/{found[2]}/cmdline", "rb") as fh:
            command = fh.read(300).replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = found[1]
    return f"PID {found[2]} ({' '.join(command.split())[:160]})"


LOCK_ADVICE = ("close the program holding it, e.g. a `duckdb` shell; `defsentflow sql \"...\"` reads it and lets go "
               "after each query")


def lock_wait_message(path: object, timeout: float) -> str:
    """The one line a command waiting for the catalog says: what it waits for, how long, what to do."""
    return (f"waiting for the catalog {path}: another process has it open (DuckDB: one process writes a database "
            f"file, and only while no other has it open, even read-only); waiting up to {timeout:.0f} s: {LOCK_ADVICE}")


@contextlib.contextmanager
def artifact_lock(key: str, root: str | os.PathLike | None = None) -> Iterator[Path]:
    """Hold an exclusive lock on ``<data root>/locks/<key>.lock`` (blocks while another holds it).

    The kernel drops the lock when its holder dies, even by ``kill -9``, so no stale lock survives.
    """
    path = root_place(data_root(root), "locks", f"{key}.lock")  # a locks/ link leading out is refused
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _writer_lock_file(root: Path) -> IO[str] | None:
    """The open writer-lock file, or None on a read-only data root (nothing can be written there)."""
    path = root_place(root, "locks", WRITER_LOCK)  # a locks/ link leading out is refused
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "a+")  # noqa: SIM115 - held by the caller's block
    except OSError:
        return None


@contextlib.contextmanager
def writer_shared(root: Path, timeout: float) -> Iterator[None]:
    """Hold the catalog's writer lock shared (a writing connection is open): waits, saying so, while a
    rebuild holds it, at most ``timeout`` seconds (:class:`CatalogLockedError`)."""
    if str(root) in _EXCLUSIVE or os.environ.get("DEFSENTFLOW_WORKER") == "1":  # a worker: the open refuses
        yield
        return
    fh = _writer_lock_file(root)
    if fh is None:
        yield
        return
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("waiting for `defsentflow catalog rebuild` to finish: it holds the catalog's writer lock "
                        "(%s) for its whole run (up to %.0fs)", fh.name, timeout)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise CatalogLockedError(f"{root / 'catalog.duckdb'}: a catalog rebuild held the writer "
                                                 f"lock for {timeout:.0f}s") from None
                    time.sleep(0.1)
        yield
    finally:
        fh.close()


@contextlib.contextmanager
def writers_excluded(root: Path) -> Iterator[None]:
    """Hold the catalog's writer lock alone: every other writer of ``root``, in any process, waits until
    this block ends; this process's own opens go on (re-entrant)."""
    if str(root) in _EXCLUSIVE:
        yield
        return
    fh = _writer_lock_file(root)
    try:
        if fh is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log.warning("waiting for the catalog's writers to finish their writes (%s)", fh.name)
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        _EXCLUSIVE.add(str(root))
        yield
    finally:
        _EXCLUSIVE.discard(str(root))
        if fh is not None:
            fh.close()


def _poll_flock(fh: IO[str], mode: int, deadline: float) -> bool:
    """Take ``mode`` on ``fh``, polling until ``deadline`` (monotonic); whether it was taken."""
    while True:
        try:
            fcntl.flock(fh.fileno(), mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


@contextlib.contextmanager
def writer_turn(root: Path, deadline: float) -> Iterator[None]:
    """Held by a writer while it waits for the catalog file (DuckDB lets one writer or many readers hold
    it): new reads wait (:func:`give_way_to_writer`) until the reads in progress end and it got in.
    Writers take turns; past ``deadline`` the caller's own wait decides (it keeps trying without it)."""
    path = root_place(root, "locks", TURN_LOCK)  # a locks/ link leading out is refused
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")  # noqa: SIM115 - closed below
    except OSError:  # a read-only root: the write fails on its own
        yield
        return
    try:
        _poll_flock(fh, fcntl.LOCK_EX, deadline)
        yield
    finally:
        fh.close()


def give_way_to_writer(root: Path, deadline: float) -> bool:
    """Before a read opens the catalog: wait while a writer waits for it (:func:`writer_turn`), at most
    until ``deadline`` (monotonic); whether the way is free. Never creates a file (a read-only root)."""
    try:
        fh = open(root_place(root, "locks", TURN_LOCK))  # noqa: SIM115 - closed below
    except (OSError, OutsideRootError):  # no writer has waited here (or locks/ leads out: not read)
        return True
    with fh:
        return _poll_flock(fh, fcntl.LOCK_SH, deadline)


def connect_waiting(connect: Callable[[], T], root: Path, *, writer: bool, timeout: float, locked: Callable[[Exception], bool],
                    give_way: bool = True, what: object = "the catalog") -> T:
    """``connect()``, retried with jittered backoff while ``locked(exc)`` says another process holds the
    file, at most ``timeout`` seconds (:class:`CatalogLockedError`); any other error is raised.

    The one wait of every catalog open. A writer that finds the file held takes its turn
    (:func:`writer_turn`) and polls often; a read (``give_way``: not nested inside this process's own
    open) first waits while a writer waits. So reads that overlap one another, each bounded, end and
    the writer gets in; without it a writer found no moment free of reads and gave up.
    """
    started = time.monotonic()
    deadline = started + timeout
    if not writer and give_way and not give_way_to_writer(root, deadline):
        raise CatalogLockedError(f"{what}: a writer waited for the catalog for {timeout:.0f}s")
    delay, waiting, said, blocked = 0.05, False, False, False
    with contextlib.ExitStack() as turn:
        while True:
            try:
                con = connect()
                _WAITED[0] += time.monotonic() - started if blocked else 0.0
                if said:
                    log.warning("catalog %s: free again after %.0f s of waiting", what, time.monotonic() - started)
                return con
            except Exception as exc:
                if not locked(exc):
                    raise
                blocked = True
                if time.monotonic() > deadline:
                    _WAITED[0] += time.monotonic() - started
                    raise CatalogLockedError(f"{what}: locked by another process for {timeout:g} s: {lock_holder(exc)} "
                                             f"holds it ({LOCK_ADVICE}; --lock-timeout SECONDS waits longer)") from exc
            if not said and time.monotonic() - started >= LOCK_NOTICE_S:
                said = True
                log.warning(lock_wait_message(what, timeout))
            if writer and not waiting:  # new reads wait now: those in progress end, then this writer gets in
                turn.enter_context(writer_turn(root, deadline))
                waiting = True
            time.sleep(delay + random.random() * delay)
            delay = min(delay * 2, 0.25 if waiting else 2.0)
