"""Safe output paths: a command never removes or overwrites anything it did not write.

Every user-given output path (``report --out``, ``encode --out``, the exports) goes through
:func:`output_dir` or :func:`output_file`. Compared as resolved paths, they refuse the data root,
any ancestor of it, any path inside it other than the command's own default location, a
non-empty folder that is not an earlier output of the same command, and a file that is not one.
An earlier output is recognised by what the command wrote beside it: a folder by the marker
file :data:`OUTPUT_MARKER` (which also lists the files written, so a file added later by the
user keeps the folder from being replaced), a Parquet file by the schema metadata key
``defsentflow.output``, any other file by a hidden sidecar marker. Writing goes to a temporary
sibling that is renamed into place, so an error leaves the destination as it was.

Example:
    >>> with output_file("vectors.parquet", command="encode") as tmp:
    ...     pq.write_table(table.replace_schema_metadata(parquet_output_metadata("encode")), tmp)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from defsentflow.storage.paths import RECORD_NAME, data_root
from defsentflow.storage.swap import swap_dir_into_place, temporary_sibling

__all__ = [
    "OUTPUT_MARKER",
    "OutputRefusedError",
    "check_output",
    "output_dir",
    "output_file",
    "parquet_output_metadata",
]

OUTPUT_MARKER = ".defsentflow-output.json"
PARQUET_KEY = b"defsentflow.output"


class OutputRefusedError(ValueError):
    """An output path that would replace or remove something the command did not write."""


def parquet_output_metadata(command: str) -> dict[bytes, bytes]:
    """Schema metadata marking a Parquet file as the output of ``defsentflow COMMAND``."""
    return {PARQUET_KEY: command.encode()}


def _sidecar(path: Path) -> Path:
    return path.with_name(f".{path.name}{OUTPUT_MARKER}")


def _refuse(path: Path, command: str, why: str) -> OutputRefusedError:
    return OutputRefusedError(f"refusing to write the {command} output to {path}: {why}")


def _check_location(path: Path, command: str, root, default) -> tuple[Path, bool]:
    """The resolved destination and whether it is ``default``, or :class:`OutputRefusedError` for the data root and paths in it."""
    given = Path(path).expanduser()
    if given.is_symlink():
        raise _refuse(given, command, "it is a symbolic link")
    final = given.resolve()
    home = data_root(root, create=False)
    is_default = default is not None and final == Path(default).expanduser().resolve()
    if final == home:
        raise _refuse(given, command, "it is the data root")
    if home.is_relative_to(final):
        raise _refuse(given, command, f"it holds the data root {home}")
    if final.is_relative_to(home) and not is_default:
        hint = f" other than the default {default}" if default is not None else ""
        raise _refuse(given, command, f"it is inside the data root {home}{hint}; choose a folder outside it")
    return final, is_default


def _read_marker(marker: Path) -> dict | None:
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("created_by") == "defsentflow" else None


def _own_dir(final: Path, command: str, *, at_default: bool) -> bool:
    """Whether the existing folder ``final`` may be replaced: empty, or all ours (see module doc)."""
    if not final.is_dir():
        raise _refuse(final, command, "it exists and is not a folder")
    present = {p.relative_to(final).as_posix() for p in final.rglob("*") if not p.is_dir()}
    if not present:
        return True
    marker = _read_marker(final / OUTPUT_MARKER)
    if marker is None:
        if at_default:  # the command's own place in the data root, from code before markers
            return True
        raise _refuse(final, command, "the folder is not empty and was not written by defsentflow "
                                      f"(no {OUTPUT_MARKER}); choose a new or empty folder")
    if marker.get("command") != command:
        raise _refuse(final, command, f"the folder holds the output of `defsentflow {marker.get('command')}`")
    # The artifact record (storage.records) that the catalog writes beside a registered output is ours too.
    listed = set(marker.get("files") or []) | {OUTPUT_MARKER, RECORD_NAME}
    extra = sorted(present - listed)
    if "files" in marker and extra:
        raise _refuse(final, command, f"the folder holds files defsentflow did not write: {extra[0]}"
                                      + (f" and {len(extra) - 1} more" if len(extra) > 1 else ""))
    return True


def _own_file(final: Path, command: str, *, at_default: bool) -> None:
    """Raise unless the existing file ``final`` is an earlier output of ``command``."""
    if not final.is_file():
        raise _refuse(final, command, "it exists and is not a regular file")
    marker = _read_marker(_sidecar(final))
    if marker is not None and marker.get("command") == command:
        return
    if final.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq  # lazy: pyarrow loads only where it is used

            meta = pq.read_schema(final).metadata or {}
        except Exception:  # noqa: BLE001 - not readable as Parquet: not ours
            meta = {}
        if meta.get(PARQUET_KEY) == command.encode():
            return
    if at_default:
        return
    raise _refuse(final, command, "the file exists and is not an earlier output of this command; "
                                  "choose a new file name")


def check_output(path: str | os.PathLike, *, command: str, kind: str = "dir", root: str | os.PathLike | None = None,
                 default: str | os.PathLike | None = None) -> Path:
    """Only the checks of :func:`output_dir` (``kind="dir"``) or :func:`output_file` (``"file"``):
    the resolved destination, or :class:`OutputRefusedError`. For refusing before long work."""
    final, at_default = _check_location(Path(path), command, root, default)
    if final.exists() or final.is_symlink():
        (_own_dir if kind == "dir" else _own_file)(final, command, at_default=at_default)
    return final


@contextlib.contextmanager
def output_dir(path: str | os.PathLike, *, command: str, root: str | os.PathLike | None = None,
               default: str | os.PathLike | None = None) -> Iterator[Path]:
    """Yield a temporary sibling folder of ``path``; on success mark it and swap it into place.

    Raises :class:`OutputRefusedError` (one line, naming the path and why) before anything is
    written if the destination is not allowed (see the module doc). Only an empty folder or an
    earlier output of the same ``command`` is replaced; on error the destination is untouched.
    """
    final, at_default = _check_location(Path(path), command, root, default)
    if final.exists() or final.is_symlink():
        _own_dir(final, command, at_default=at_default)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(final)
    tmp.mkdir()
    try:
        yield tmp
        files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if not p.is_dir())
        (tmp / OUTPUT_MARKER).write_text(json.dumps({"command": command, "created_by": "defsentflow",
                                                     "files": files}, indent=2), encoding="utf-8")
        # checked again at the swap: the user may have added a file meanwhile
        swap_dir_into_place(tmp, final, lambda f: _own_dir(f, command, at_default=at_default))
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def output_file(path: str | os.PathLike, *, command: str, root: str | os.PathLike | None = None,
                default: str | os.PathLike | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it into place.

    The same rules as :func:`output_dir` for one file: an existing file is replaced only if it is
    an earlier output of ``command`` (a Parquet file written with :func:`parquet_output_metadata`,
    or any file with its sidecar marker, which is written here for every non-Parquet output and
    for a Parquet file lacking the metadata key).
    """
    final, at_default = _check_location(Path(path), command, root, default)
    if final.exists() or final.is_symlink():
        _own_file(final, command, at_default=at_default)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(final)
    try:
        yield tmp
        with open(tmp, "rb") as fh:  # the data reaches the disk before the rename makes it visible
            os.fsync(fh.fileno())
        if not _parquet_marked(tmp, command):
            _sidecar(final).write_text(json.dumps({"command": command, "created_by": "defsentflow"}),
                                       encoding="utf-8")
        if final.exists():
            _own_file(final, command, at_default=at_default)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


def _parquet_marked(path: Path, command: str) -> bool:
    if path.suffix.lower() != ".parquet" and not path.name.endswith(".parquet"):
        return False
    try:
        import pyarrow.parquet as pq  # lazy: pyarrow loads only where it is used

        return (pq.read_schema(path).metadata or {}).get(PARQUET_KEY) == command.encode()
    except Exception:  # noqa: BLE001 - not Parquet: it gets a sidecar
        return False
