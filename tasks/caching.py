"""Stage caching: Prefect cache keys from input content hashes + config + code version,
backed by the catalog.

Every stage task takes only small, JSON-serialisable parameters (paths WITH their content
hashes, config sections as dicts). Its cache key is a hash of the task name, those parameters and
the library's code version, never the run id, so a re-run with the same inputs is a cache hit.
Results are persisted under the data root (``PREFECT_LOCAL_STORAGE_PATH``), so the cache survives
a new machine that has the storage directory. The catalog's ``stage_cache`` table records what
each key produced; when those files are gone the key is salted, forcing a recompute instead of
returning a reference to nothing.
"""

from __future__ import annotations

import functools
import json
import uuid
from pathlib import Path
from typing import Any, Callable

from defsentflow.storage import Catalog, code_version, combine_hashes, hash_config, hash_path
from defsentflow.storage.locks import artifact_lock
from defsentflow.storage.manifest import quick_check

__all__ = ["stage_key", "stage_cache_key_fn", "stage_task", "file_ref", "ref_paths"]


def file_ref(path: str | Path) -> dict[str, str]:
    """A path with its content hash: what a task takes instead of the data itself."""
    return {"path": str(Path(path).resolve()), "hash": hash_path(path)}


def stage_key(task_name: str, parameters: dict[str, Any]) -> str:
    return combine_hashes([task_name, hash_config(parameters), code_version()])


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
    rows = Catalog().query("SELECT ref FROM stage_cache WHERE cache_key = ?", [key])
    if not rows:
        return None
    ref = json.loads(rows[0]["ref"]) if isinstance(rows[0]["ref"], str) else rows[0]["ref"]
    paths = ref_paths(ref)
    if not all(Path(p).exists() for p in paths):
        return False
    # Registered artifacts among them must still match their manifests (a changed file: recompute).
    arts = Catalog().query("SELECT path, manifest FROM artifacts WHERE manifest IS NOT NULL AND list_contains(?, path)",
                           [paths]) if paths else []
    return not any(quick_check(a["path"], a["manifest"]) for a in arts)


def stage_cache_key_fn(context: Any, parameters: dict[str, Any]) -> str:
    key = stage_key(context.task.name, parameters)
    if _complete(key) is False:
        return f"{key}-stale-{uuid.uuid4().hex[:8]}"
    return key


def stage_task(fn: Callable | None = None, **task_kwargs: Any):
    """``@stage_task(name=...)``: a Prefect task cached by :func:`stage_cache_key_fn`.

    The wrapped function's return value (a small reference dict) is recorded in ``stage_cache``.
    """
    from prefect import task

    def decorate(func: Callable) -> Any:
        name = task_kwargs.pop("name", func.__name__.replace("_", "-"))

        @functools.wraps(func)
        def body(*args: Any, **kwargs: Any) -> Any:
            import inspect

            bound = inspect.signature(func).bind(*args, **kwargs)
            bound.apply_defaults()
            key = stage_key(name, dict(bound.arguments))
            # Two runs reaching the same stage at once: the second waits, then finds the
            # library's content-addressed artifact complete and skips the work.
            with artifact_lock(key):
                ref = func(*args, **kwargs)
            Catalog().execute(
                "INSERT OR REPLACE INTO stage_cache (cache_key, task, ref) VALUES (?, ?, ?)",
                [key, name, json.dumps(ref, default=str)],
            )
            return ref

        return task(name=name, cache_key_fn=stage_cache_key_fn, persist_result=True, **task_kwargs)(body)

    return decorate(fn) if fn is not None else decorate
