"""Stage caching: Prefect cache keys from input content hashes + config + code version,
backed by the catalog.

Every stage task takes only small, JSON-serialisable parameters (paths WITH their content
hashes, config sections as dicts). Its cache key is a hash of the task name, those parameters and
the library's code version, never the run id, so a re-run with the same inputs is a cache hit.
Results are persisted under the data root (``PREFECT_LOCAL_STORAGE_PATH``), so the cache survives
a new machine that has the storage directory. The catalog's ``stage_cache`` table records what
each key produced; when those files are gone the key is salted, forcing a recompute instead of
returning a reference to nothing. A key with no ``stage_cache`` row whose Prefect result exists
(the catalog was lost or rebuilt) is not trusted either: the stage runs again, finds its
content-addressed artifact (registered again from its on-disk record) and records the key.

Paths are stored relative to the data root in cache keys, ``stage_cache`` refs and the results
Prefect persists, and resolved against the current root when a task returns, so a copied or
moved data root keeps its cache hits and reads only its own files.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from defsentflow.storage import Catalog, code_version, combine_hashes, data_root, hash_config, hash_path
from defsentflow.storage.locks import artifact_lock
from defsentflow.storage.manifest import quick_check
from defsentflow.storage.paths import from_root, to_root

__all__ = ["stage_key", "stage_cache_key_fn", "stage_task", "file_ref", "ref_paths"]


def file_ref(path: str | Path) -> dict[str, str]:
    """A path with its content hash: what a task takes instead of the data itself."""
    return {"path": str(Path(path).resolve()), "hash": hash_path(path)}


def _map_paths(ref: Any, fn: Callable[[str], Any], *, all_strings: bool = False) -> Any:
    """``ref`` with ``fn`` applied to each path value (keys ``path``, ``*_path``, ``*_dir``; every
    string with ``all_strings``)."""
    if isinstance(ref, dict):
        return {k: fn(v) if isinstance(v, str) and (all_strings or k == "path" or k.endswith(("_path", "_dir")))
                else _map_paths(v, fn, all_strings=all_strings) for k, v in ref.items()}
    if isinstance(ref, (list, tuple)):
        out = [fn(v) if all_strings and isinstance(v, str) else _map_paths(v, fn, all_strings=all_strings) for v in ref]
        return tuple(out) if isinstance(ref, tuple) else out
    return ref


def relative_ref(ref: Any, root: str | Path | None = None) -> Any:
    """``ref`` with its absolute paths inside the data root made root-relative."""
    root = data_root(root)
    return _map_paths(ref, lambda v: to_root(root, v) if v.startswith(str(root) + "/") else v, all_strings=True)


def resolved_ref(ref: Any, root: str | Path | None = None) -> Any:
    """``ref`` with root-relative paths made absolute under the current data root."""
    root = data_root(root)
    return _map_paths(_map_paths(ref, lambda v: from_root(root, v) if "/" in v else v, all_strings=True),
                      lambda v: from_root(root, v))


def stage_key(task_name: str, parameters: dict[str, Any]) -> str:
    """Task name, parameters (paths inside the data root taken relative to it) and code version."""
    return combine_hashes([task_name, hash_config(relative_ref(parameters)), code_version()])


def ref_paths(ref: Any) -> list[str]:
    """Every value under a key named ``path``/``*_path``/``*_dir`` in a (nested) reference."""
    out: list[str] = []
    if isinstance(ref, dict):
        for k, v in ref.items():
            if isinstance(v, str) and (k == "path" or k.endswith("_path") or k.endswith("_dir")):
                out.append(v)
            else:
                out.extend(ref_paths(v))
    elif isinstance(ref, (list, tuple)):
        for v in ref:
            out.extend(ref_paths(v))
    return out


def _complete(key: str) -> bool | None:
    """True: recorded and its files exist unchanged; False: recorded but files gone or changed;
    None: never recorded."""
    cat = Catalog()
    rows = cat.query("SELECT ref FROM stage_cache WHERE cache_key = ?", [key])
    if not rows:
        return None
    ref = json.loads(rows[0]["ref"]) if isinstance(rows[0]["ref"], str) else rows[0]["ref"]
    paths = ref_paths(resolved_ref(ref, cat.root))
    if not all(Path(p).exists() for p in paths):
        return False
    # Registered artifacts among them must still match their manifests (a changed file: recompute).
    arts = cat.query("SELECT path, manifest FROM artifacts WHERE manifest IS NOT NULL AND list_contains(?, path)",
                     [[cat.rel(p) for p in paths]]) if paths else []
    return not any(quick_check(a["path"], a["manifest"]) for a in arts)


def _has_result(context: Any, key: str) -> bool:
    """Whether Prefect holds a persisted result for ``key`` (a cache hit it would return), asked of
    the task run's own result store (the storage Prefect would read it from)."""
    store = getattr(context, "result_store", None)
    if store is not None:
        try:
            return bool(store.exists(key))
        except Exception:  # noqa: BLE001 - a store that cannot say: fall back to the local path below
            pass
    storage = os.environ.get("PREFECT_LOCAL_STORAGE_PATH")
    return bool(storage) and (Path(storage).expanduser() / key).exists()


def stage_cache_key_fn(context: Any, parameters: dict[str, Any]) -> str:
    key = stage_key(context.task.name, parameters)
    done = _complete(key)
    # False: its files changed or are gone. None with a Prefect result: the catalog does not know
    # what the result refers to (a lost or rebuilt catalog), so the result is not trusted.
    if done is False or (done is None and _has_result(context, key)):
        return f"{key}-stale-{uuid.uuid4().hex[:8]}"
    return key


def stage_task(fn: Callable | None = None, **task_kwargs: Any):
    """``@stage_task(name=...)``: a Prefect task cached by :func:`stage_cache_key_fn`.

    The wrapped function's return value (a small reference dict) is recorded in ``stage_cache``.
    """

    def decorate(func: Callable) -> Any:
        name = task_kwargs.pop("name", func.__name__.replace("_", "-"))

        @functools.wraps(func)
        def body(*args: Any, **kwargs: Any) -> Any:
            bound = inspect.signature(func).bind(*args, **kwargs)
            bound.apply_defaults()
            key = stage_key(name, dict(bound.arguments))
            # Two runs reaching the same stage at once: the second waits, then finds the
            # library's content-addressed artifact complete and skips the work.
            with artifact_lock(key):
                ref = relative_ref(func(*args, **kwargs))
            Catalog().execute(
                "INSERT OR REPLACE INTO stage_cache (cache_key, task, ref) VALUES (?, ?, ?)",
                [key, name, json.dumps(ref, default=str)],
            )
            return ref

        return _StageTask(fn=body, name=name, cache_key_fn=stage_cache_key_fn, persist_result=True, **task_kwargs)

    return decorate(fn) if fn is not None else decorate


def _stage_task_class() -> type:
    from prefect import Task  # lazy: Prefect loads only where a flow or task runs

    class StageTask(Task):
        """A Prefect task whose (root-relative) result is resolved under the current data root."""

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            out = super().__call__(*args, **kwargs)
            return out if kwargs.get("return_state") else resolved_ref(out)

    return StageTask


def _StageTask(**kwargs: Any) -> Any:  # noqa: N802 (a class built on first use: Prefect is imported late)
    global _STAGE_TASK
    if _STAGE_TASK is None:
        _STAGE_TASK = _stage_task_class()
    return _STAGE_TASK(**kwargs)


_STAGE_TASK: type | None = None
