"""The one figure path: every figure keyed, stored and written once, whoever asks for it.

A figure is one requested task's metric rows for one model and pooling. Its key
(:func:`figure_key`) is the model's content (the hash of its files), the task's name and the
settings of its kind that change it (:meth:`~defsentflow.evaluation.kinds.TaskKind.settings`: the
figure's name carries them), the pooling, the content of its inputs and the code version: nothing
about who asked, where it runs or the id the rows are filed under. :func:`evaluate_figures` reads
the figures found in the one store (``cache/evaluations/<key>.json`` with its record beside it),
computes the missing ones with their kind (one pass per kind), and writes each with
:func:`write_figure`, the one writer, whose record also carries the figure's metric rows for
the catalog (:meth:`~defsentflow.storage.catalog.Catalog.register_records`).

``defsentflow eval``, the ``evaluate`` flow, a pipeline's baselines and PST's selection after each
candidate all go this way, so ``eval <PST's winner> --tasks stsb-dev`` finds the figure the
selection computed, and ``eval base:all-MiniLM-L6-v2 --tasks stsb-dev`` step 0's.

Example:
    >>> out = evaluate_figures("minilm", EvalConfig(tasks=("stsb-dev",)), model_id="base:all-MiniLM-L6-v2")
    >>> out.cached, [r["task"] for r in out.rows]
    (False, ['stsb-dev'])
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from defsentflow.encoders import model_content_hash, validate_pooling
from defsentflow.encoders.loading import resolve_model_path
from defsentflow.evaluation.kinds import TaskKind, kinds_for
from defsentflow.model import HEAD_DEFAULTS, Head, model_head
from defsentflow.model.record import RECORD_FILE, steady_record
from defsentflow.storage import code_version, combine_hashes, data_root, hash_config, hash_path, root_place, write_json
from defsentflow.storage.hashing import MODEL_FILE_SUFFIXES, hash_file
from defsentflow.storage.locks import artifact_lock
from defsentflow.storage.records import make_record, read_record, write_record

__all__ = ["Figures", "default_pooling", "evaluate_figures", "figure_key", "figure_path", "head_identity",
           "model_figure_hash", "read_figure", "run_head", "write_figure"]


@dataclass(frozen=True)
class Figures:
    """The rows of every requested figure, the records of those written now, and whether all were found."""

    pooling: str
    rows: tuple[dict[str, Any], ...]
    seconds: dict[str, float] = field(default_factory=dict)
    records: tuple[dict[str, Any], ...] = ()
    cached: bool = False


def default_pooling(model: str | os.PathLike) -> str:
    """The pooling a model was trained with (its head, :func:`defsentflow.model.model_head`)."""
    try:
        return model_head(resolve_model_path(model)).pooling
    except ValueError:  # an unreadable record: the default, as for a bare checkpoint
        return HEAD_DEFAULTS["pooling"]


def run_head(model: str | os.PathLike, section: Any) -> Head | None:
    """The head ``section.head`` (a run's, :class:`~defsentflow.evaluation.config.RunHead`) asks the
    head figures of ``model`` to be scored with; None when there is none or it is the model's own."""
    if getattr(section, "head", None) is None:
        return None
    pooling = section.pooling or default_pooling(model)
    own = model_head(resolve_model_path(model), pooling=pooling)
    head = dataclasses.replace(model_head(resolve_model_path(model), pooling=pooling, use_pooler=section.head.use_pooler,
                                          entry_encoding=section.head.entry_encoding),
                               normalize_logits=section.head.normalize_logits)
    return None if head_identity(head) == head_identity(own) else head


def head_identity(head: Head | None) -> dict[str, Any] | None:
    """What of a head given to the figure path changes a head figure (None: the model's own head,
    which its content names)."""
    if head is None:
        return None
    return {"use_pooler": head.use_pooler, "entry_encoding": head.entry_encoding, "ica": head.ica,
            "normalize_logits": head.normalize_logits, "entry_encoder": head.entry_encoder}


def model_figure_hash(model: str | os.PathLike) -> str:
    """The model's part of a figure key: its files' content and its record without the training's wall
    time (:func:`~defsentflow.model.record.steady_record`). A figure depends on the weights and on the
    head the record names, never on how long training took, so the same training run again (another
    host, a Dask worker) finds the figures of the first."""
    path = Path(resolve_model_path(model))
    try:
        record = steady_record(path) if path.is_dir() else None
    except ValueError:  # an unreadable record: the folder's plain content hash, as before
        record = None
    if record is None:
        return model_content_hash(model)
    files = [f for f in sorted(path.iterdir()) if f.is_file() and not f.name.startswith(".")
             and f.name != RECORD_FILE and f.suffix in MODEL_FILE_SUFFIXES]
    return combine_hashes([hash_config(record), *(f"{f.name}:{hash_file(f)}" for f in files)])


def figure_key(model_hash: str, kind: TaskKind, task: str, config: Any, pooling: str, inputs: str,
               head: Head | None = None) -> str:
    """The key of ``task``'s figure: model content, task and the settings its kind says change it,
    pooling, the inputs' content, the head it was scored with when not the model's own, code version."""
    settings = {"task": task, "kind": kind.name, "pooling": pooling, **kind.settings(task, config)}
    if head is not None:
        settings["head"] = head_identity(head)
    return combine_hashes(["figure", model_hash, hash_config(settings), inputs, code_version()])


def figure_path(root: str | os.PathLike, key: str) -> Path:
    """Where the figure of ``key`` lies in the one store."""
    return root_place(data_root(root), "evaluations", f"{key}.json")


def read_figure(root: str | os.PathLike, key: str) -> dict[str, Any] | None:
    """The stored figure of ``key`` (``pooling``, ``rows``, ``seconds``, ...) when its record vouches for
    the file (written last, its content hash the file's); else None. Opens no catalog."""
    path = figure_path(root, key)
    try:
        rec = read_record(path)
        if rec is None or not path.is_file() or rec.get("content_hash") != hash_path(path):
            return None
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("rows"), list) else None


def write_figure(root: str | os.PathLike, key: str, payload: Mapping[str, Any], *, model_id: str | None,
                 model_hash: str, inputs: str, run_id: str | None = None) -> dict[str, Any]:
    """Write one figure (``payload``: ``pooling``, ``rows``, ``seconds`` and what its asker adds) and,
    last, its record, which carries the rows filed under ``model_id`` for the catalog. Opens no catalog;
    the caller that holds it registers the record (the flow process, the ``eval`` stage)."""
    path = figure_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(dict(payload), path)
    rows = [{**r, "model_id": model_id} for r in payload["rows"]] if model_id else None
    rec = make_record(data_root(root), key=key, kind="evaluation", path=path, content_hash=hash_path(path),
                      name=model_id, input_hashes={"model": model_hash, "data": inputs}, run_id=run_id,
                      config={"pooling": payload.get("pooling"), "tasks": sorted({r["task"] for r in payload["rows"]})},
                      metrics=rows)
    write_record(path, rec)
    return rec


def _held(keys: Sequence[str], root: str | os.PathLike) -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    for key in sorted(set(keys)):  # one order for every process: no two wait on each other
        stack.enter_context(artifact_lock(key, root))
    return stack


def evaluate_figures(model: str | os.PathLike, config: Any, *, root: str | os.PathLike | None = None,
                     model_id: str | None = None, run_id: str | None = None, head: Head | None = None,
                     table: pa.Table | None = None, inputs: Mapping[str, str] | None = None, store: bool = True,
                     compute: bool = True) -> Figures | None:
    """Every figure ``config`` asks of ``model``: read back where stored, else computed by its kind and
    written (:func:`write_figure`). ``head``: the head the head figures are scored with (a run's
    baseline scored with the head the run trains; None: the model's own). ``store=False``: compute
    everything, read and write nothing (``eval --no-record``). ``table``: a dictionary kind reads it
    instead of the catalog (a worker), ``inputs`` the content of each task's inputs named where the
    catalog was read; ``compute=False``: None unless every figure is stored. ``records``: the record
    of every figure (stored or written now), for the caller that holds the catalog to register."""
    path = str(model)
    pooling = validate_pooling(config.pooling or default_pooling(path))
    home = data_root(root)
    mhash = model_figure_hash(path) if store else ""
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    records: list[dict[str, Any]] = []
    all_found = True
    for kind in kinds_for(config):
        tasks = kind.tasks(config)
        named = {t: (inputs or {}).get(t) or kind.inputs(t, config) for t in tasks} if store else {}
        used = head if kind.uses_head else None
        keys = {t: figure_key(mhash, kind, t, config, pooling, named[t], used) for t in tasks} if store else {}
        found = {t: read_figure(home, keys[t]) for t in tasks} if store else {}
        missing = tuple(t for t in tasks if found.get(t) is None)
        if missing and not compute:
            return None
        records += [read_record(figure_path(home, keys[t])) for t in tasks if t not in missing]
        with _held([keys[t] for t in missing], home) if store and missing else contextlib.nullcontext():
            if store:  # another process may have written them while this one waited for the locks
                found.update({t: read_figure(home, keys[t]) for t in missing})
                records += [read_record(figure_path(home, keys[t])) for t in missing if found[t] is not None]
            missing = tuple(t for t in tasks if found.get(t) is None)
            if missing:
                all_found = False
                t0 = time.perf_counter()
                computed = kind.run(path, config, missing, pooling, table=table, root=None if root is None else str(root),
                                    head=used)
                spent = time.perf_counter() - t0
                for t in missing:
                    own = [r for r in computed if kind.owner(r["task"], missing) == t]
                    found[t] = {"pooling": pooling, "rows": own, "seconds": {kind.name: spent / len(missing)}}
                    if store:
                        records.append(write_figure(home, keys[t], found[t], model_id=model_id, model_hash=mhash,
                                                    inputs=named[t], run_id=run_id))
        for t in tasks:
            rows += found[t]["rows"]
            for name, s in (found[t].get("seconds") or {}).items():
                seconds[name] = seconds.get(name, 0.0) + float(s)
    return Figures(pooling, tuple(rows), seconds, tuple(r for r in records if r), cached=all_found and bool(rows))
