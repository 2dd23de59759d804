"""Safe output paths: a command never removes or overwrites anything it did not write.

Every user-given output path (``report --out``, ``encode --out``, the exports) goes through
:func:`output_dir` or :func:`output_file`. Compared as resolved paths, they refuse the data root,
any ancestor of it, any path inside it other than the command's own default location, a
non-empty folder that is not an earlier output of the same command, and a file that is not one.
An earlier output is recognised by what the command wrote beside it, and a marker is input like
any file: a folder by the marker file :data:`OUTPUT_MARKER`, which vouches only for the files it
lists (a marker without the list, or a file added later by the user, keeps the folder from being
replaced); a Parquet file by the schema metadata key ``defsentflow.output``; any other file by a
hidden sidecar marker holding the file's content hash (a file changed since, or a sidecar beside a
user's file, is not ours). A folder of any data root (one holding a catalog or an artifact record,
or lying below one) is never an output. Writing goes to a temporary sibling that is renamed into
place, so an error leaves the destination as it was; a temporary left by a killed earlier write to
the same destination (``.tmp-<dead pid>-<hex>-<name>``) is removed by the next one.

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

from defsentflow.limits import LIMITS
from defsentflow.storage.bounded_json import read_json_file
from defsentflow.storage.hashing import hash_file
from defsentflow.storage.paths import RECORD_NAME, data_root
from defsentflow.storage.swap import remove_stale_siblings, swap_dir_into_place, temporary_sibling

__all__ = [
    "OUTPUT_MARKER",
    "OutputRefusedError",
    "check_output",
    "marker_vouches",
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
    """The resolved destination and whether it is ``default``, or :class:`OutputRefusedError` for the
    data root, paths in it, and folders of any other data root."""
    given = Path(path).expanduser()
    if given.is_symlink():
        raise _refuse(given, command, "it is a symbolic link")
    final = given.resolve()
    blocker = next((p for p in final.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise _refuse(given, command, f"{blocker} is a file, not a folder")
    home = data_root(root, create=False)
    is_default = default is not None and final == Path(default).expanduser().resolve()
    if final == home:
        raise _refuse(given, command, "it is the data root")
    if home.is_relative_to(final):
        raise _refuse(given, command, f"it holds the data root {home}")
    if final.is_relative_to(home) and not is_default:
        hint = f" other than the default {default}" if default is not None else ""
        raise _refuse(given, command, f"it is inside the data root {home}{hint}; choose a folder outside it")
    if not is_default:
        other = next((p for p in (final, *final.parents) if (p / "catalog.duckdb").exists()), None)
        if other is not None:
            raise _refuse(given, command, f"it is inside the data root {other}; choose a folder outside it")
        if final.is_dir() and _holds_records(final):
            raise _refuse(given, command, "it holds artifact records of a data root")
    return final, is_default


def _holds_records(folder: Path) -> bool:
    return any(True for _ in folder.rglob(RECORD_NAME)) or any(True for _ in folder.rglob(".*.defsentflow-record.json"))


def _read_marker(marker: Path) -> dict | None:
    """The marker's content if it is one defsentflow writes (a listed ``files`` included), else None."""
    if not marker.is_file():
        return None
    try:
        data = read_json_file(marker, max_bytes=LIMITS["record_bytes"], what="output marker")
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("created_by") != "defsentflow" or not isinstance(data.get("command"), str):
        return None
    files = data.get("files")
    if not isinstance(files, list) or len(files) > LIMITS["record_items"] or not all(
            isinstance(f, str) and f and not f.startswith("/") and ".." not in f.split("/") for f in files):
        return None
    return data


def marker_vouches(folder: Path, command: str | None = None) -> bool:
    """Whether ``folder``'s :data:`OUTPUT_MARKER` (of ``command``, when given) lists every file in it."""
    marker = _read_marker(folder / OUTPUT_MARKER)
    if marker is None or (command is not None and marker["command"] != command):
        return False
    return not _present(folder) - set(marker["files"]) - {OUTPUT_MARKER}


def _present(folder: Path) -> set[str]:
    """What ``folder`` holds besides plain folders: files, and links of any kind (a link to a folder is
    something the user put there, not an empty place)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_symlink() or not p.is_dir()}


def _own_dir(final: Path, command: str, *, at_default: bool) -> bool:
    """Whether the existing folder ``final`` may be replaced: empty, or all ours (see module doc)."""
    if not final.is_dir():
        raise _refuse(final, command, "it exists and is not a folder")
    if not any(final.iterdir()):  # "empty" only when it holds nothing at all
        return True
    present = _present(final) or {p.name for p in final.iterdir()}  # only folders: the user's still
    marker = _read_marker(final / OUTPUT_MARKER)
    if marker is None:
        if at_default:  # the command's own place in the data root, from code before markers
            return True
        raise _refuse(final, command, "the folder is not empty and was not written by defsentflow "
                                      f"(no {OUTPUT_MARKER} listing its files); choose a new or empty folder")
    if marker.get("command") != command:
        raise _refuse(final, command, f"the folder holds the output of `defsentflow {marker.get('command')}`")
    # At the default place in the data root the catalog writes the artifact record beside the output.
    listed = set(marker["files"]) | {OUTPUT_MARKER} | ({RECORD_NAME} if at_default else set())
    extra = sorted(present - listed)
    if extra:
        raise _refuse(final, command, f"the folder holds files defsentflow did not write: {extra[0]}"
                                      + (f" and {len(extra) - 1} more" if len(extra) > 1 else ""))
    return True


def _own_file(final: Path, command: str, *, at_default: bool) -> None:
    """Raise unless the existing file ``final`` is an earlier output of ``command``, unchanged since."""
    if not final.is_file():
        raise _refuse(final, command, "it exists and is not a regular file")
    marker = _read_marker(_sidecar(final))
    if marker is not None and marker["command"] == command and marker["files"] == [final.name] \
            and marker.get("sha") == hash_file(final):
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
    raise _refuse(final, command, "the file exists and is not an earlier output of this command (or it changed "
                                  "since); choose a new file name")


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
    remove_stale_siblings(final)  # what a killed earlier write to this destination left beside it
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
    remove_stale_siblings(final)
    tmp = temporary_sibling(final)
    try:
        yield tmp
        with open(tmp, "rb") as fh:  # the data reaches the disk before the rename makes it visible
            os.fsync(fh.fileno())
        if final.exists():  # checked again: the user may have replaced it meanwhile
            _own_file(final, command, at_default=at_default)
        if not _parquet_marked(tmp, command):
            _sidecar(final).write_text(json.dumps({"command": command, "created_by": "defsentflow",
                                                   "files": [final.name], "sha": hash_file(tmp)}), encoding="utf-8")
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
