"""The log of one pipeline run: everything in ``<data root>/logs/RUN_ID.log``, a readable terminal.

The ``pipeline`` flow writes the file whoever starts it (``defsentflow run``, a deployment run on a
worker); ``defsentflow run`` opens it first, with the terminal's format, and the flow finds it open.

Every line, in the file and on the terminal, carries its time, level and the flow or task it came
from (``12:03:04 INFO  [pst-step-1] ...``). The terminal leaves out what helps nobody there: the
"View at http://127.0.0.1:..." links to the temporary Prefect API (gone when the run ends) and,
unless ``-v``, tracebacks and the lines after a message's first; the file keeps everything.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from defsentflow.storage.paths import disk_full

__all__ = ["RunLog", "elapsed", "is_open", "run_log"]

_LOGGERS = ("", "prefect", "prefect.flow_runs", "prefect.task_runs", "defsentflow", "flows", "tasks")
_FORMAT = "%(asctime)s %(levelname)-5s [%(where)s] %(message)s"


def _where(record: logging.LogRecord) -> str:
    """The task run's name, else the flow's (its run's name where the flow gave it one, as
    ``pst-step-1``, not Prefect's random 'quartz-terrier'), else the logger's."""
    task = getattr(record, "task_run_name", None)
    if task:
        return task
    flow, run = getattr(record, "flow_name", None), getattr(record, "flow_run_name", None)
    if flow:
        return run if run and str(run).startswith(flow) else flow
    return record.name.removeprefix("prefect.").removesuffix("_runs") or "run"


class _Formatter(logging.Formatter):
    """Time, level and flow/task name on every line; ``brief``: the first line only, no traceback."""

    def __init__(self, brief: bool, datefmt: str, msecs: bool = False):
        # The file's lines carry milliseconds: two task runs of one name (Prefect adds 3 random hex
        # digits) can finish in the same second, and their lines must stay told apart.
        super().__init__(_FORMAT.replace("%(asctime)s", "%(asctime)s.%(msecs)03d") if msecs else _FORMAT,
                         datefmt=datefmt)
        self.brief = brief

    def format(self, record: logging.LogRecord) -> str:
        record = copy.copy(record)
        record.where = _where(record)
        if self.brief:
            msg = record.getMessage()
            record.msg, record.args = msg.split("\n", 1)[0].rstrip(), None
            record.exc_info = record.exc_text = record.stack_info = None
        return super().format(record)


class _NoApiLinks(logging.Filter):
    """Prefect's "View at http://127.0.0.1:PORT/..." points at a server that ends with the run."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("View at ")


class _Once(logging.Filter):
    """Each record once: the file handler hangs on the root logger and on ``prefect``, and whether
    ``prefect`` propagates to the root depends on who configured logging last (Prefect's own
    ``logging.yml`` lets it; a deployment's flow run wrote every Prefect line twice)."""

    def filter(self, record: logging.LogRecord) -> bool:
        seen = record.__dict__.setdefault("_defsentflow_handled", set())
        if id(self) in seen:
            return False
        seen.add(id(self))
        return True


class RunLog:
    """Where the run's log goes and how long it has run."""

    def __init__(self, path: Path):
        self.path = path
        self.started = time.monotonic()
        self.failed_task: str | None = None   # the innermost failed task run, when a run fails

    def info(self, message: str) -> None:
        """A line on the terminal (as is) and in the log file (with time and 'run')."""
        print(message)
        if message.strip():
            logging.getLogger("defsentflow.run").info(message, extra={"terminal": False})


class _NotForTerminal(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "terminal", True)


def elapsed(seconds: float) -> str:
    """``'42 s'``, ``'3 min 05 s'``, ``'1 h 02 min'``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


_OPEN: set[Path] = set()  # log files this process writes now


def is_open(path: Path) -> bool:
    """Whether this process is already writing the log file ``path``."""
    return Path(path).resolve() in _OPEN


class _LogFile(logging.FileHandler):
    """The run's log file: a write that fails (a full disk) is said once, on stderr, in one line, and the
    file is left; every later record goes on to the terminal (logging's default printed a traceback for
    each record: 2,295 of them in one full-disk run)."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        if self.failed:
            return
        self.failed = True
        exc = sys.exc_info()[1]
        why = disk_full(self.baseFilename) if getattr(exc, "errno", None) == errno.ENOSPC else \
            f"{type(exc).__name__}: {exc}"
        print(f"defsentflow: cannot write the run log {self.baseFilename}: {why}", file=sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        if not self.failed:
            super().emit(record)

    def flush(self) -> None:
        try:
            super().flush()
        except OSError:  # the disk filled between two records: said once, as for a record
            self.handleError(None)  # type: ignore[arg-type]

    def close(self) -> None:
        try:
            super().close()
        except OSError:
            self.handleError(None)  # type: ignore[arg-type]


@contextlib.contextmanager
def run_log(path: Path, *, verbose: bool = False, terminal: bool = True) -> Iterator[RunLog]:
    """Send every log record to ``path`` (created) and, with ``terminal``, make the terminal's lines
    brief (a worker's output is left as Prefect formats it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _OPEN.add(path.resolve())
    file_handler = _LogFile(path, encoding="utf-8")
    file_handler.setLevel(logging.DEBUG)
    file_handler.setFormatter(_Formatter(brief=False, datefmt="%Y-%m-%d %H:%M:%S", msecs=True))
    file_handler.addFilter(_NoApiLinks())
    file_handler.addFilter(_Once())
    brief = _Formatter(brief=not verbose, datefmt="%H:%M:%S")
    touched: list[tuple[logging.Handler, logging.Formatter | None]] = []
    filters = (_NoApiLinks(), _NotForTerminal())
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        for h in logger.handlers if terminal else ():
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler) \
                    and h not in (t[0] for t in touched):
                touched.append((h, h.formatter))
                h.setFormatter(brief)
                for f in filters:
                    h.addFilter(f)
        if name in ("", "prefect"):  # prefect does not propagate to the root
            logger.addHandler(file_handler)
    logging.getLogger("defsentflow.run").setLevel(logging.INFO)
    library = logging.getLogger("defsentflow")  # a worker's root logger passes only warnings: the steps' lines too
    library_level = library.level
    if library.getEffectiveLevel() > logging.INFO:
        library.setLevel(logging.INFO)
    try:
        yield RunLog(path)
    finally:
        library.setLevel(library_level)
        _OPEN.discard(path.resolve())
        for name in ("", "prefect"):
            logging.getLogger(name).removeHandler(file_handler)
        file_handler.close()
        for h, fmt in touched:
            h.setFormatter(fmt)
            for f in filters:
                h.removeFilter(f)
