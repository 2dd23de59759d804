"""A run's record in the catalog from start to end: the one lifecycle every sequencer uses.

:func:`recorded_run` opens the ``runs`` row (with the process that owns it: host and pid), and
closes it ``completed`` (or the status the body sets), ``failed`` with a one-line reason, or
``interrupted`` when the process was stopped (Ctrl-C, ``SIGTERM``). A process killed outright
(``kill -9``, the OOM killer) cannot close its row; :func:`mark_interrupted_runs` finds such rows
(owner on this host, process gone) and closes them ``interrupted`` whenever a run starts and when
``defsentflow runs`` lists them; readers (``serve``'s ``/runs``) show them so without writing
(:func:`shown`).

Example:
    >>> with recorded_run(Catalog(), "harvest-pairs", run_id, config=cfg) as run:
    ...     run.note = "1,000 pairs"
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from defsentflow.storage.atomic import pid_alive

__all__ = ["RunRecord", "failure_reason", "is_stale", "mark_interrupted_runs", "recorded_run", "shown"]

REASON_CHARS = 300  # one line on /runs and in the report


def failure_reason(exc: BaseException) -> str:
    """``Type: first line of the message``, at most :data:`REASON_CHARS` characters."""
    if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM, Prefect's TerminationSignal: stopped from outside
        code = exc.code if isinstance(exc, SystemExit) else None
        if isinstance(code, int) and code > 128:  # the CLI's SIGTERM handler exits 128 + signal
            return f"interrupted ({signal.Signals(code - 128).name})"
        return f"interrupted ({type(exc).__name__})"
    text = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 3] + "..."


@dataclass
class RunRecord:
    """What the body of :func:`recorded_run` says about its run: the closing status and note."""

    run_id: str | None
    status: str = "completed"
    note: str | None = None


@contextlib.contextmanager
def recorded_run(catalog: Any, flow: str, run_id: str | None, *, config: Any = None,
                 config_hash: str | None = None) -> Iterator[RunRecord]:
    """Open the ``runs`` row ``run_id`` of ``flow`` and close it however the body ends.

    The body may set ``status`` (``stopped``, ``unchanged``, ``failed``) and ``note``; an exception
    closes the row ``failed`` with :func:`failure_reason` (``interrupted`` for what stops a process
    from outside: Ctrl-C, ``SIGTERM``, a cancelled flow run) and is raised again. A row opened by another flow under the same id (a pipeline
    whose stage flows share its run id) is left to that flow to close. No record when ``run_id`` is
    None.
    """
    record = RunRecord(run_id)
    if run_id is None:
        yield record
        return
    with catalog.session():  # one open of the file for both (catalog.py: Catalog.session)
        mark_interrupted_runs(catalog)  # earlier runs killed outright: closed before this one opens
        catalog.start_run(flow, config=config, config_hash=config_hash, run_id=run_id)
    try:
        yield record
    except BaseException as exc:
        status = "failed" if isinstance(exc, Exception) else "interrupted"
        catalog.end_run(run_id, status, note=failure_reason(exc), flow=flow)
        raise
    catalog.end_run(run_id, record.status, note=record.note, flow=flow)


def owner() -> tuple[str, int]:
    """``(host, pid)`` of this process: who keeps a run it opens ``running``."""
    return socket.gethostname(), os.getpid()


def is_stale(row: dict[str, Any]) -> bool:
    """Whether a ``running`` row's owner process (on this host) is gone. Rows of other hosts, and
    rows without an owner, are taken as alive (nothing here can tell)."""
    if row.get("status") != "running" or row.get("host") != socket.gethostname():
        return False
    pid = row.get("pid")
    return isinstance(pid, int) and not pid_alive(pid)


def shown(row: dict[str, Any]) -> dict[str, Any]:
    """A ``runs`` row as listings show it: ``status`` ``interrupted`` when its process is gone (the
    row may not be closed yet: a reader cannot write), ``reason`` the one-line note of a run that
    did not complete (None otherwise)."""
    out = dict(row)
    if is_stale(out):
        out["status"] = "interrupted"
        out["note"] = f"interrupted: its process ({out['pid']} on {out['host']}) is gone"
    bad = out.get("status") in ("failed", "interrupted", "stopped")
    note = out.get("note")
    out["reason"] = " ".join(str(note).split())[:REASON_CHARS] if bad and note else None
    return out


def mark_interrupted_runs(catalog: Any) -> list[str]:
    """Close ``interrupted`` every ``running`` run whose owner process on this host is gone; the ids."""
    rows = catalog.query("SELECT run_id, flow, status, host, pid FROM runs WHERE status = 'running' AND host = ?",
                         [socket.gethostname()])
    gone = [r for r in rows if is_stale(r)]
    for r in gone:
        catalog.end_run(r["run_id"], "interrupted", note=f"interrupted: its process ({r['pid']} on {r['host']}) "
                        "is gone", flow=r["flow"])
    return [r["run_id"] for r in gone]
