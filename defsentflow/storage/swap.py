"""Temporary siblings and the swap of a finished directory into place, shared by the library's
artifact writer (:func:`defsentflow.storage.atomic.atomic_dir`) and the commands' safe outputs
(:func:`defsentflow.storage.outputs.output_dir`).

A temporary is named ``.tmp-<pid>-<8 hex digits>-<name>`` beside its final path (:data:`TMP_PATTERN`,
nothing else), so :func:`~defsentflow.storage.atomic.clean_stale_temporaries` and
:func:`remove_stale_siblings` recognise those left by dead processes and nothing a user named.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["TMP_PATTERN", "TMP_PREFIX", "create_file_once", "pid_alive", "remove_stale_siblings", "stale_temporary",
           "swap_dir_into_place", "temporary_sibling"]

TMP_PREFIX = ".tmp-"
TMP_PATTERN = re.compile(r"^\.tmp-(\d{1,10})-[0-9a-f]{8}-(.+)$")  # exactly what temporary_sibling writes


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (OSError, IndexError):
        return True


def stale_temporary(path: Path) -> bool:
    """Whether ``path`` is a temporary of :func:`temporary_sibling` whose process is gone."""
    m = TMP_PATTERN.match(path.name)
    if m is None or path.is_symlink():
        return False
    pid = int(m.group(1))
    return pid != os.getpid() and not pid_alive(pid)


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_stale_siblings(final: Path) -> list[Path]:
    """Remove the temporaries of ``final`` (same folder, same name) left by dead processes: a killed
    earlier write to it. Nothing else beside it is touched."""
    if not final.parent.is_dir():
        return []
    found = [p for p in final.parent.glob(f"{TMP_PREFIX}*-{final.name}")
             if (m := TMP_PATTERN.match(p.name)) and m.group(2) == final.name and stale_temporary(p)]
    for p in found:
        remove(p)
    return found


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


def create_file_once(final: Path, write: Callable[[Path], Any]) -> bool:
    """Make the file ``final`` whole or not at all, never over one that is there: ``write`` fills a
    temporary sibling, which is then hard-linked into place. Whether it did; False, leaving nothing
    behind, when ``final`` exists (another process made it first) or the directory cannot take it (an
    ``OSError`` from ``write`` or the link: read-only, missing, no hard links)."""
    tmp = temporary_sibling(final)  # a kill leaves it to clean_stale_temporaries, like every atomic write's
    try:
        write(tmp)
        os.link(tmp, final)  # atomic; never over a file that is there
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
