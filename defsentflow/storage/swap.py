"""Temporary siblings and the swap of a finished directory into place, shared by the library's
artifact writer (:func:`defsentflow.storage.atomic.atomic_dir`) and the commands' safe outputs
(:func:`defsentflow.storage.outputs.output_dir`).

A temporary is named ``.tmp-<pid>-<random>-<name>`` beside its final path, so
:func:`~defsentflow.storage.atomic.clean_stale_temporaries` recognises those left by dead processes.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["TMP_PREFIX", "swap_dir_into_place", "temporary_sibling"]

TMP_PREFIX = ".tmp-"


def temporary_sibling(final: Path) -> Path:
    """A fresh temporary name beside ``final``."""
    return final.with_name(f"{TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}-{final.name}")


def swap_dir_into_place(tmp: Path, final: Path, check: Callable[[Path], Any]) -> None:
    """Put the finished directory ``tmp`` at ``final``. An existing ``final`` is first passed to
    ``check`` (which raises to refuse), then renamed aside and removed only after the swap."""
    if final.exists():
        check(final)
        old = temporary_sibling(final)
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
