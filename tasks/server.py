"""Running flows locally without a Prefect server: a temporary API server tied to this process.

Prefect's own temporary server is a ``uvicorn`` child that survives a hard kill of its parent, so
killed runs pile up orphaned servers. Here the same server app is started with the kernel's
parent-death signal (``PR_SET_PDEATHSIG``): when the ``defsentflow`` process dies, even by
``kill -9``, its server dies with it. Orphans from runs killed before this existed are reaped from
the pid file under the data root.

The server listens on loopback, or, for a command whose Dask workers are on other hosts, on this
host's address on the route to them (``host``): every task a worker runs reports there. It then
asks for a random HTTP basic-auth string, which the command's flows and their tasks carry in
their Prefect settings; ``PREFECT_API_URL`` set by the user (a persistent server) is used as is.

A fresh ``PREFECT_HOME`` (a new data root) would have its SQLite database created and migrated by its
first server (about 6 of the 10 s of CPU the start takes): the first server that migrates one leaves a
copy in the user's cache (:func:`defsentflow.storage.paths.user_cache_dir`, one per Prefect version),
taken as soon as it answers, before any run is in it; a later fresh home starts from a copy of that.
Never where the user set a database URL, never over a database that is there.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from defsentflow.storage.atomic import pid_alive
from defsentflow.storage.paths import user_cache_dir
from defsentflow.storage.swap import create_file_once

__all__ = ["local_api", "reap_orphan_servers", "SERVER_MARKER"]

SERVER_MARKER = "DEFSENTFLOW_LOCAL_SERVER"
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    os.setpgrp()


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _pidfile() -> Path:
    return Path(os.environ["PREFECT_HOME"]) / "local-servers.pid"


def reap_orphan_servers() -> list[int]:
    """Kill temporary servers recorded in the pid file whose owner process is gone."""
    killed: list[int] = []
    pf = _pidfile()
    if not pf.exists():
        return killed
    keep = []
    for line in pf.read_text().split():
        try:
            owner, pid = (int(x) for x in line.split(":"))
        except ValueError:
            continue
        if pid_alive(owner):
            keep.append(line)
            continue
        if pid_alive(pid) and _is_our_server(pid):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    pf.write_text("\n".join(keep))
    return killed


def _is_our_server(pid: int) -> bool:
    try:
        return SERVER_MARKER.encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def _flush_api_logs() -> None:
    try:
        from prefect.logging.handlers import APILogWorker  # lazy: Prefect loads only where a flow or task runs

        APILogWorker.drain_all(timeout=10)
    except Exception:  # best effort before the server goes away
        pass
    try:
        from prefect.events.worker import EventsWorker  # lazy: Prefect loads only where a flow or task runs

        EventsWorker.drain_all(timeout=10)
    except Exception:
        pass


def server_command(host: str, port: int) -> list[str]:
    """The temporary server's command line: Prefect's server app under uvicorn."""
    import prefect  # lazy: Prefect loads only where a flow or task runs

    return [sys.executable, "-m", "uvicorn", "--app-dir", str(Path(prefect.__file__).parent.parent), "--factory",
            "prefect.server.api.server:create_app", "--host", host, "--port", str(port),
            "--log-level", "error", "--lifespan", "on"]


def _server_database(home: Path) -> Path | None:
    """The SQLite file a temporary server uses: ``PREFECT_HOME/prefect.db``, or None where the user
    set a database of their own."""
    if any(os.environ.get(k) for k in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL")):
        return None
    return home / "prefect.db"


def database_template() -> Path:
    """The migrated, empty server database kept for fresh Prefect homes (one per Prefect version)."""
    import prefect  # lazy: Prefect loads only where a flow or task runs

    return user_cache_dir() / f"prefect-{prefect.__version__}-server.db"


def _seed_database(db: Path) -> bool:
    """Put a copy of the template at ``db`` if there is none there yet; whether it did (the caller
    holds the start lock; a copy that cannot be made leaves the server to migrate as before)."""
    template = database_template()
    if db.exists() or not template.is_file():
        return False
    return create_file_once(db, lambda tmp: shutil.copyfile(template, tmp))  # never over a database that is there


def _keep_template(db: Path) -> None:
    """A consistent copy (SQLite's online backup) of the database a server just migrated, as the
    template, where there is none yet; best effort."""
    template = database_template()
    if template.exists() or not db.is_file():
        return

    def backup(tmp: Path) -> None:
        src, dst = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True), sqlite3.connect(tmp)
        try:
            src.execute("SELECT version_num FROM alembic_version").fetchone()  # Prefect's, migrated
            src.backup(dst)
        finally:
            src.close()
            dst.close()

    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        create_file_once(template, backup)  # never over a template that is there (another command's, just made)
    except (OSError, sqlite3.Error):
        pass


@contextlib.contextmanager
def local_api(timeout: float = 180.0, host: str = "127.0.0.1") -> Iterator[str]:
    """Yield a ``PREFECT_API_URL`` for this process: the user's if set, else a temporary server
    listening on ``host`` (loopback, or the address the command's remote workers route to)."""
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    reap_orphan_servers()
    home = Path(os.environ["PREFECT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    port = _free_port(host)
    auth = None if host in ("127.0.0.1", "localhost") else f"defsentflow:{secrets.token_urlsafe(24)}"
    env = {
        **os.environ,
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
        SERVER_MARKER: str(os.getpid()),
        **({"PREFECT_SERVER_API_AUTH_STRING": auth} if auth else {}),
    }
    # Two commands starting on a fresh PREFECT_HOME would both create and migrate its SQLite database
    # (one failed with Prefect's migration traceback): servers start one at a time, each holding this
    # lock until it answers, by when its migrations are done.
    starting = open(home / ".server-start.lock", "a+")  # held until the server answers
    fcntl.flock(starting.fileno(), fcntl.LOCK_EX)
    db = _server_database(home)
    fresh = db is not None and not db.exists() and not _seed_database(db)  # this server migrates a new database
    proc = subprocess.Popen(server_command(host, port), env=env, preexec_fn=_die_with_parent, stdout=subprocess.DEVNULL)
    with open(_pidfile(), "a") as fh:
        fh.write(f"\n{os.getpid()}:{proc.pid}")
    url = f"http://{host}:{port}/api"
    saved_auth = os.environ.get("PREFECT_API_AUTH_STRING")
    deadline = time.monotonic() + timeout
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the local Prefect server exited with code {proc.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the local Prefect server did not answer within {timeout:.0f}s")
            time.sleep(0.25)
        if fresh:
            _keep_template(db)  # migrated, answering, no run in it yet
        starting.close()  # migrated and answering: the next command's server may start
        os.environ["PREFECT_API_URL"] = url
        from prefect.settings import (  # lazy: Prefect loads only where a flow or task runs
            PREFECT_API_AUTH_STRING,
            PREFECT_API_URL,
            temporary_settings,
        )

        updates: dict[Any, Any] = {PREFECT_API_URL: url}
        if auth:
            os.environ["PREFECT_API_AUTH_STRING"] = auth
            updates[PREFECT_API_AUTH_STRING] = auth
        with temporary_settings(updates):
            yield url
    finally:
        starting.close()
        _flush_api_logs()
        os.environ.pop("PREFECT_API_URL", None)
        if auth:
            if saved_auth is None:
                os.environ.pop("PREFECT_API_AUTH_STRING", None)
            else:
                os.environ["PREFECT_API_AUTH_STRING"] = saved_auth
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
