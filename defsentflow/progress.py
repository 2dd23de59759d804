"""Progress bars: live on a terminal, periodic plain lines in a log, silent with ``--quiet``.

On a terminal the bar redraws itself. When stderr is a file or a pipe (``nohup``, a Prefect worker,
CI), a redrawn bar would be one ever-growing line of carriage returns, and no bar at all would leave
long stages silent for minutes; there the bar is printed as a complete line at most every
``DEFSENTFLOW_PROGRESS_INTERVAL`` seconds (default 30) and once at the end.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TypeVar

from tqdm.auto import tqdm

__all__ = ["live", "progress", "quiet"]

T = TypeVar("T")

_LOG_INTERVAL_S = 30.0


def quiet() -> bool:
    """True when bars are turned off (``DEFSENTFLOW_QUIET`` set, e.g. by ``--quiet``)."""
    return bool(os.environ.get("DEFSENTFLOW_QUIET"))


def live() -> bool:
    """True when bars redraw in place (a terminal, or ``DEFSENTFLOW_PROGRESS`` set)."""
    if os.environ.get("DEFSENTFLOW_PROGRESS"):  # force live bars, e.g. in a notebook
        return True
    return sys.stderr.isatty()


class _LineWriter:
    """A file-like for tqdm that turns each redraw into one complete line."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, s: str) -> None:
        text = s.replace("\r", "").replace("\x1b[A", "").strip()
        if text:
            self.stream.write(text + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress(iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str | None = None,
             unit: str = "it", **kwargs) -> tqdm:
    """``tqdm`` with the project's defaults (stderr; line-per-interval when not on a terminal)."""
    if live():
        options = {"file": sys.stderr, "dynamic_ncols": True, "mininterval": 0.5}
    else:
        interval = float(os.environ.get("DEFSENTFLOW_PROGRESS_INTERVAL", _LOG_INTERVAL_S))
        options = {"file": _LineWriter(sys.stderr), "ncols": 100, "ascii": True,
                   "mininterval": interval, "maxinterval": max(interval, 10.0)}
    options.update(kwargs)
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=quiet(), **options)
