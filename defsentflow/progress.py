"""Progress bars that stay quiet when not on a terminal or when ``--quiet`` is given."""

from __future__ import annotations

import os
import sys
from typing import Iterable, TypeVar

from tqdm.auto import tqdm

__all__ = ["progress", "quiet"]

T = TypeVar("T")


def quiet() -> bool:
    if os.environ.get("DEFSENTFLOW_QUIET"):
        return True
    if os.environ.get("DEFSENTFLOW_PROGRESS"):  # force bars on, e.g. under a Prefect worker log
        return False
    return not sys.stderr.isatty()


def progress(iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str | None = None,
             unit: str = "it", **kwargs) -> tqdm:
    """``tqdm`` with the project's defaults (stderr, disabled when quiet)."""
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=quiet(), file=sys.stderr,
                dynamic_ncols=True, mininterval=0.5, **kwargs)
