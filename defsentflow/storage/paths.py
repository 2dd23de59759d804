"""Where things live: the data root and the SQL directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["DATA_ROOT_LAYOUT", "ROOT_FOLDERS", "OutsideRootError", "RootPlace", "place_folder", "place_relpath", "root_place",
           "choose_data_root", "data_root", "default_data_root", "disk_full", "sql_dir", "repo_root", "sample_dir", "to_root",
           "from_root", "relative_tree", "resolved_tree", "root_path", "inside_root", "user_cache_dir"]

# The on-disk record beside every artifact (defsentflow.storage.records); here so that modules
# below records (outputs, atomic) can recognise it without an import cycle.
RECORD_NAME = ".defsentflow-record.json"

_PACKAGE = Path(__file__).resolve().parents[1]


def repo_root() -> Path:
    """The source checkout this package runs from (editable installs)."""
    return _PACKAGE.parent


def default_data_root() -> Path:
    """The data root when none is chosen: ``storage/`` of the source checkout this package runs
    from (an editable install), else the per-user ``$XDG_DATA_HOME/defsentflow`` (by default
    ``~/.local/share/defsentflow``). Never the current directory: a command gives the same answer
    wherever it is started."""
    if (repo_root() / "pyproject.toml").is_file() and (repo_root() / "defsentflow" / "__init__.py").is_file():
        return repo_root() / "storage"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "defsentflow"


def choose_data_root(config_home: str | None = None, config_file: str | os.PathLike | None = None) -> tuple[Path, str]:
    """The one data-root rule: ``(root, how it was chosen)``.

    1. a config's ``home:`` (relative to the config file's folder);
    2. ``--home DIR`` on the command line (it sets ``$DEFSENTFLOW_HOME``) or ``$DEFSENTFLOW_HOME``;
    3. :func:`default_data_root`.
    """
    if config_home:
        base = Path(config_file).resolve().parent if config_file else Path.cwd()
        return (base / Path(config_home).expanduser()).resolve(), f"home: in {config_file or 'the config'}"
    if os.environ.get("DEFSENTFLOW_HOME"):
        return Path(os.environ["DEFSENTFLOW_HOME"]).expanduser().resolve(), "--home / $DEFSENTFLOW_HOME"
    return default_data_root().resolve(), "default"


def user_cache_dir() -> Path:
    """What this user's commands keep for one another, whatever their data root (nothing a result
    depends on): ``$DEFSENTFLOW_CACHE_DIR``, else ``$XDG_CACHE_HOME/defsentflow`` (by default
    ``~/.cache/defsentflow``). Not created here."""
    if os.environ.get("DEFSENTFLOW_CACHE_DIR"):
        return Path(os.environ["DEFSENTFLOW_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "defsentflow"


def data_root(override: str | os.PathLike | None = None, *, create: bool = True) -> Path:
    """The data root: ``override``, else ``$DEFSENTFLOW_HOME``, else :func:`default_data_root`
    (a command applies :func:`choose_data_root` first, which sets ``$DEFSENTFLOW_HOME``).

    The directory is created if missing (unless ``create`` is false). It holds ``parquet/``,
    ``models/``, ``cache/`` and ``catalog.duckdb``.
    """
    if override:
        root = Path(override)
    elif os.environ.get("DEFSENTFLOW_HOME"):
        root = Path(os.environ["DEFSENTFLOW_HOME"])
    else:
        root = default_data_root()
    root = root.expanduser().resolve()
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root


def sql_dir() -> Path:
    """The directory of numbered DDL files: package data ``defsentflow/sql`` (importlib.resources),
    or ``$DEFSENTFLOW_SQL_DIR``."""
    env = os.environ.get("DEFSENTFLOW_SQL_DIR")
    path = Path(env) if env else Path(str(resources.files("defsentflow") / "sql"))
    if not path.is_dir():
        raise FileNotFoundError(f"SQL directory not found: {path} (set DEFSENTFLOW_SQL_DIR)")
    return path


def sample_dir() -> Path:
    """The small, licence-clean sample data shipped inside the package (importlib.resources)."""
    return Path(str(resources.files("defsentflow") / "sample"))


# -- the data root's layout --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RootPlace:
    """One folder of a data root: where it lies (root-relative, POSIX), which artifact kind is filed
    there (None: not an artifact folder) and how the artifact's key shows in its path (``name``: the
    key names its folder or file; ``run``: it is filed under its run's id, as PST's result and the run
    report are)."""

    folder: str
    kind: str | None = None
    naming: str = "name"


DATA_ROOT_LAYOUT: dict[str, RootPlace] = {
    # tables and their inputs
    "dictionaries": RootPlace("parquet/dictionaries", "dictionary"),
    "corpora": RootPlace("parquet/corpora", "corpus"),
    "harvest": RootPlace("parquet/harvest", "pairs"),
    # models (one artifact kind; a folder per trainer) and their heads
    "models": RootPlace("models", "model"),
    "pst_models": RootPlace("models/pst", "model"),
    "surrogate_models": RootPlace("models/surrogate", "model"),
    "pretrain_models": RootPlace("models/pretrain", "model"),
    "scorers": RootPlace("models/scorers", "scorer"),
    "entry_matrices": RootPlace("pst/entry_matrices", "entry_matrix"),
    "selection_scores": RootPlace("pst/scores", "selection_score"),  # written before selection used the evaluation store
    "pst_steps": RootPlace("pst/steps", "pst_step"),
    "pst_runs": RootPlace("pst/runs", "pst_result", "run"),
    # what is computed from a model
    "evaluations": RootPlace("cache/evaluations", "evaluation"),
    "revdict_indexes": RootPlace("revdict", "revdict_index"),
    "indexes": RootPlace("indexes", "index"),
    "reports": RootPlace("reports", "report", "run"),
    "plots": RootPlace("plots"),
    "sweeps": RootPlace("sweeps"),
    "claims": RootPlace("claims"),
    "exports": RootPlace("exports"),
    # caches and work in progress
    "embeddings": RootPlace("cache/embeddings"),
    "entry_shards": RootPlace("cache/entry-shards"),
    "sentence_vectors": RootPlace("cache/sentence_vectors"),
    "surrogate_checkpoints": RootPlace("cache/surrogate-checkpoints"),
    "checkpoints": RootPlace("checkpoints"),
    "pst_checkpoints": RootPlace("checkpoints/pst"),
    "pretrain_checkpoints": RootPlace("checkpoints/pretrain"),
    # the catalog's own files and the run's side files
    "records": RootPlace("records"),          # row records (storage/row_records.py)
    "run_records": RootPlace("records/runs"),
    "model_records": RootPlace("records/models"),
    "sweep_records": RootPlace("records/sweeps"),
    "alias_records": RootPlace("records/aliases"),
    "quarantine": RootPlace("quarantine"),    # records set aside as invalid
    "configs": RootPlace("configs"),
    "logs": RootPlace("logs"),
    "locks": RootPlace("locks"),
    "prefect": RootPlace("prefect"),
}
"""The one table of where things live in a data root: the writers build their paths from it
(:func:`root_place`), the record checks read each artifact kind's folder from it, and the path rules
(:func:`from_root`) read its top-level folders. Spell a root folder here, nowhere else."""

ROOT_FOLDERS = (frozenset(p.folder.split("/", 1)[0] for p in DATA_ROOT_LAYOUT.values())
                | {"corpora", "dictionaries", "embeddings"})
"""The top-level folders of a data root: a stored relative path starts with one of them (``corpora``,
``dictionaries``, ``embeddings``: top-level folders of roots written before the layout above)."""


def place_folder(place: str) -> str:
    """The root-relative folder of ``place`` (a key of :data:`DATA_ROOT_LAYOUT`)."""
    try:
        return DATA_ROOT_LAYOUT[place].folder
    except KeyError:
        raise KeyError(f"no place {place!r} in the data root's layout; known: {sorted(DATA_ROOT_LAYOUT)}") from None


def root_place(root: str | os.PathLike, place: str, *parts: str | os.PathLike) -> Path:
    """``<root>/<place's folder>/<parts>``, refused (:class:`OutsideRootError`) if it resolves outside
    the root (:func:`inside_root`: ``..``, an absolute part or a symbolic link leading out).

    Example:
        >>> root_place("/data", "pst_models", "abc").as_posix()
        '/data/models/pst/abc'
    """
    return inside_root(root, Path(place_folder(place)).joinpath(*parts))


def place_relpath(place: str, *parts: str) -> str:
    """The root-relative POSIX path of ``parts`` in ``place`` (what the catalog stores)."""
    return "/".join([place_folder(place), *parts])


class OutsideRootError(ValueError):
    """A path of the data root that resolves outside it (``..``, an absolute part, a symbolic link
    inside the root that leads out): never read, served, written or quarantined into."""


def inside_root(root: str | os.PathLike, path: str | os.PathLike) -> Path:
    """``path`` (absolute, or relative to ``root``) resolved, refused (:class:`OutsideRootError`, one
    line) unless it lies inside ``root`` once every symbolic link on the way is followed.

    Call it where a file or folder of the root is opened (served, read, written, quarantined into).

    Example:
        >>> inside_root("/data", "/data/reports/run-1").as_posix()
        '/data/reports/run-1'
    """
    base = Path(root).expanduser().resolve()
    p = Path(path).expanduser()
    resolved = (p if p.is_absolute() else base / p).resolve()
    if resolved != base and not resolved.is_relative_to(base):
        shown = p.relative_to(base) if p.is_absolute() and p.is_relative_to(base) else p
        raise OutsideRootError(f"path {shown} escapes the data root {base} (it resolves to {resolved}); refused")
    return resolved


def root_path(root: str | os.PathLike, folder: str, *parts: str | os.PathLike) -> Path:
    """``root / folder / parts`` for one of the data root's folders (:data:`ROOT_FOLDERS`), through
    :func:`inside_root`: ``..``, an absolute part or a symbolic link leading out is refused.

    Example:
        >>> root_path("/data", "reports", "run-1").as_posix()
        '/data/reports/run-1'
    """
    if folder not in ROOT_FOLDERS:
        raise OutsideRootError(f"path {Path(folder).joinpath(*parts)} escapes the data root {root}: {folder!r} is not "
                               f"one of its folders ({', '.join(sorted(ROOT_FOLDERS))})")
    return inside_root(root, Path(folder).joinpath(*parts))


def disk_full(path: str | os.PathLike) -> str:
    """One line naming the disk (its mount point and free space) and the folder a write to ``path``
    failed in for want of space (``[Errno 28]``)."""
    folder = Path(path).expanduser().absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    mount = folder
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        st = os.statvfs(folder)
        free = f"{st.f_bavail * st.f_frsize / 2**20:.1f} MiB free"
    except OSError:
        free = "free space unknown"
    return (f"no space left on the disk mounted at {mount} ({free}) writing in {folder}: free some space and run "
            "the command again (its finished stages are kept; the catalog heals at the next run)")


def to_root(root: str | os.PathLike, path: str | os.PathLike) -> str:
    """``path`` as stored in the catalog, manifests and cache keys: relative to the data root
    (POSIX form) when it lies inside it, else unchanged (a model id, a file elsewhere).

    Stored this way, a copied, moved or differently mounted data root reads only its own files.
    """
    text = str(path)
    p = Path(text)
    if not p.is_absolute():
        return text
    root = Path(root).resolve()
    try:
        return Path(os.path.normpath(p)).relative_to(root).as_posix() or "."
    except ValueError:
        pass
    try:  # the same place through a symlink
        return p.resolve().relative_to(root).as_posix() or "."
    except (ValueError, OSError):
        return text


def from_root(root: str | os.PathLike, value: str | None) -> str | None:
    """The absolute path of a value stored by :func:`to_root`, under the CURRENT data root.

    A relative value is taken as root-relative when its first component is one of the data root's
    folders (or exists in the root), so a model id such as ``bert-base-uncased`` stays as it is;
    absolute values are returned as stored.
    """
    if not value or not isinstance(value, str) or value.startswith(("/", "~")) or "://" in value:
        return value
    first = value.split("/", 1)[0]
    root = Path(root)
    if first in (".", "..") or (first not in ROOT_FOLDERS and not (root / first).exists()):
        return value
    return str(root / value)


def relative_tree(root: str | os.PathLike, obj: Any) -> Any:
    """``obj`` (JSON-like) with every string that is an absolute path inside ``root`` made relative."""
    prefix = str(Path(root).resolve()) + "/"
    if isinstance(obj, str):
        return to_root(root, obj) if obj.startswith(prefix) else obj
    if isinstance(obj, dict):
        return {k: relative_tree(root, v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [relative_tree(root, v) for v in obj]
    return obj


def resolved_tree(root: str | os.PathLike, obj: Any) -> Any:
    """The inverse of :func:`relative_tree` under the current root (strings holding a ``/`` whose
    first component exists in the root)."""
    if isinstance(obj, str):
        return from_root(root, obj) if "/" in obj else obj
    if isinstance(obj, dict):
        return {k: resolved_tree(root, v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [resolved_tree(root, v) for v in obj]
    return obj
