"""Sweeps: one YAML file expands a base pipeline config into named runs that share cached stages.

A sweep file names a base pipeline config (a path, or the config inline) and *axes*: dotted keys
into that config, each with a list of values. The points are the cartesian product of the axes,
plus explicit ``points``, minus ``exclude`` matches; ``set`` changes the base for every point::

    name: minilm-lr
    base: configs/minilm-wordnet.yaml        # relative: the sweep file's folder, then cwd / repo root
    set: {pst.max_train_entries: 2000, pst.steps: 1}
    axes:
      pst.lr: [2.0e-6, 5.0e-6]
      pst.use_pooler: [true, false]
      pst.grid: [[{pooling: mean, entry_encoding: amp}], [{pooling: cls, entry_encoding: ac}]]
    points:                                  # extra points; unlisted keys keep the base value
      - {pst.normalize_logits: true, pst.temperature: 0.05}
    exclude:                                 # drop every point matching all of these
      - {pst.lr: 5.0e-6, pst.use_pooler: true}

Every point is a full pipeline config, validated like any other (an unknown key or a bad value is
an error naming the sweep file, the axis or point, and the key). Its ``name`` is
``<sweep>-<point id>``; the id is a hash of the point's values, so it does not depend on the order
of the axes or of their values. Point configs are written to ``<data root>/sweeps/<sweep>/<id>.yaml`` and run by
the ordinary pipeline, so stages that do not depend on a varied value (dictionary ingestion, the
untrained scores and evaluations, entry matrices) are computed once and then cache hits.

The ``sweep_points`` catalog table (``sql/060_sweeps.sql``) records each point's values, run id
and status. :func:`run_sweep` skips points whose last run completed with the same config and
reruns the others (a killed point resumes from its cached stages and training checkpoint).

The library never imports Prefect: :func:`run_sweep` takes the function that runs one point
(``flows/sweep.py`` passes the pipeline flow).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator

from defsentflow.config import config_from_dict
from defsentflow.config_tools import (
    ConfigSection,
    check_dotted_key,
    dotted_overrides,
    format_errors,
    read_yaml_mapping,
    resolve_path,
    set_dotted,
)
from defsentflow.dictionary.config import NAME_PATTERN
from defsentflow.fanout import FanOut, in_turn
from defsentflow.storage import Catalog, check_identifier, data_root, hash_config, root_place
from defsentflow.storage.atomic import atomic_path, pid_alive
from defsentflow.sweep_seeds import SeedAggregation

__all__ = ["MAX_SWEEP_POINTS", "Sweep", "SweepFile", "SweepOutcome", "SweepPoint", "expand_sweep", "load_sweep",
           "point_rows", "run_sweep", "set_dotted", "write_point_configs"]

log = logging.getLogger(__name__)

_ID_CHARS = 10
MAX_SWEEP_POINTS = 10_000  # default cap on a sweep's points (`--max-points` raises it)
SweepOverrides = dotted_overrides()


class SweepFile(SeedAggregation):
    """The sweep YAML (``extra="forbid"``: a misspelt key is an error naming it); + sweep_seeds' keys."""

    name: str = Field(pattern=NAME_PATTERN, description="the sweep's name; point configs are named <name>-<id>")
    description: str | None = None
    base: str | dict[str, Any] = Field(description="the base pipeline config: a path, or the config inline")
    set: SweepOverrides = Field(default_factory=dict, description="dotted key -> value applied to every point")
    axes: dict[str, list[Any]] = Field(default_factory=dict, description="dotted key -> list of values (cartesian)")
    points: list[dict[str, Any]] = Field(default_factory=list, description="extra points: dotted key -> value")
    exclude: list[dict[str, Any]] = Field(default_factory=list,
                                          description="drop every point whose values match all of one entry")

    @field_validator("axes")
    @classmethod
    def _axes(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in v.items():
            check_dotted_key(key)
            if not values:
                raise ValueError(f"axis {key!r} has no values")
            seen = [_canonical(x) for x in values]
            if len(set(seen)) != len(seen):
                raise ValueError(f"axis {key!r} lists a value twice: {values}")
        return v

    @field_validator("points", "exclude")
    @classmethod
    def _mappings(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, point in enumerate(v):
            if not point:
                raise ValueError(f"entry {i} is empty")
            for key in point:
                check_dotted_key(key)
        return v


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _label_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list) and value and all(isinstance(g, dict) and "pooling" in g for g in value):
        return "+".join(f"{g.get('pooling', 'mean')}-{g.get('entry_encoding', 'amp')}" for g in value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


@dataclass(frozen=True)
class SweepPoint:
    """One expanded point: its values, label and full pipeline config."""

    sweep: str
    point_id: str
    position: int
    params: dict[str, Any]
    config: dict[str, Any]      # the base config with the point's values and name (written as YAML)
    config_hash: str            # hash of ``config`` as written

    @property
    def name(self) -> str:
        return f"{self.sweep}-{self.point_id}"

    @property
    def label(self) -> str:
        return ", ".join(f"{k.rsplit('.', 1)[-1]}={_label_value(v)}" for k, v in self.params.items()) or "base"


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: its file, base config and expanded points."""

    name: str
    path: str | None
    spec: SweepFile
    base: dict[str, Any]
    base_path: str | None
    points: tuple[SweepPoint, ...]
    home: str | None = None

    def point(self, key: str) -> SweepPoint:
        """A point by id, name (``<sweep>-<id>``) or 1-based position."""
        for p in self.points:
            if key in (p.point_id, p.name, str(p.position)):
                return p
        raise KeyError(f"sweep {self.name!r} has no point {key!r} (ids: {', '.join(p.point_id for p in self.points)})")


def point_id_of(params: dict[str, Any]) -> str:
    return hash_config(params)[:_ID_CHARS]


def _matches(params: dict[str, Any], rule: dict[str, Any], base: dict[str, Any]) -> bool:
    for key, want in rule.items():
        have = params[key] if key in params else _get_dotted(base, key)
        if _canonical(have) != _canonical(want):
            return False
    return True


def _get_dotted(config: dict[str, Any], key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _validate_point(base: dict[str, Any], params: dict[str, Any], sweep_name: str,
                    where: str) -> tuple[dict[str, Any], str]:
    """The point's config (base + values + name), validated, and the hash of it as written (so a
    new optional setting in a later version does not make finished points look changed)."""
    config = base
    for key, value in params.items():
        try:
            config = set_dotted(config, key, value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    config = {**config, "name": f"{sweep_name}-{point_id_of(params)}"}
    config_from_dict(config, origin=where)
    return config, hash_config(config)


def expand_sweep(spec: SweepFile, base: dict[str, Any], *, origin: str = "<sweep>",
                 max_points: int = MAX_SWEEP_POINTS) -> tuple[SweepPoint, ...]:
    """The sweep's points, each a validated pipeline config (errors name ``origin``, the axis and the key).

    Raises:
        ValueError: more than ``max_points`` points (counted from the axis lengths, before anything is
            expanded), an axis value or a point that makes an invalid config, an exclude rule naming
            a key that is neither an axis nor in the base config, or a sweep with no point left.
    """
    n = math.prod(len(v) for v in spec.axes.values()) * bool(spec.axes) + len(spec.points)
    if n > max_points:
        raise ValueError(f"{origin}: the sweep has {n} points ({' x '.join(str(len(v)) for v in spec.axes.values())} "
                         f"axis values), more than {max_points}; raise the cap with --max-points")
    for key, value in spec.set.items():
        try:
            base = set_dotted(base, key, value)
        except ValueError as exc:
            raise ValueError(f"{origin}: set.{key}: {exc}") from None
    _validate_point(base, {}, spec.name, f"{origin}: base config with set")
    for key, values in spec.axes.items():  # each value alone, so an error names its axis
        for value in values:
            _validate_point(base, {key: value}, spec.name, f"{origin}: axes.{key} = {_canonical(value)}")
    keys = list(spec.axes)
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(spec.axes[k] for k in keys))] if keys else []
    combos += [dict(p) for p in spec.points]
    for i, rule in enumerate(spec.exclude):
        unknown = [k for k in rule if k not in spec.axes and _get_dotted(base, k) is None
                   and not any(k in p for p in spec.points)]
        if unknown:
            raise ValueError(f"{origin}: exclude[{i}] names {unknown}, which no axis, point or base value has")
    points: list[SweepPoint] = []
    seen: set[str] = set()
    for params in combos:
        if any(_matches(params, rule, base) for rule in spec.exclude):
            continue
        pid = point_id_of(params)
        if pid in seen:
            continue
        seen.add(pid)
        where = f"{origin}: point {', '.join(f'{k}={_canonical(v)}' for k, v in params.items()) or '(base)'}"
        config, config_hash = _validate_point(base, params, spec.name, where)
        points.append(SweepPoint(sweep=spec.name, point_id=pid, position=len(points) + 1, params=params,
                                 config=config, config_hash=config_hash))
    if not points:
        raise ValueError(f"{origin}: the sweep has no points (no axes and no points, or everything excluded)")
    return tuple(points)


def _resolve_base(base: str, sweep_dir: Path | None) -> Path:
    p = Path(base).expanduser()
    if not p.is_absolute() and sweep_dir is not None and (sweep_dir / p).is_file():
        return (sweep_dir / p).resolve()
    return resolve_path(p)


def read_with_base(path: str | os.PathLike | None, data: dict[str, Any] | None, model: type[ConfigSection], *,
                   what: str, invalid: str) -> tuple[Any, dict[str, Any], str | None]:
    """A file (or a mapping given as ``data``) that names a ``base`` pipeline config, as sweep and
    claims files do: ``(validated spec, base config mapping, base path or None when inline)``.

    A relative ``base`` is looked up beside the file first, then as :func:`_resolve_base` does.

    Raises:
        FileNotFoundError: the file or its base does not exist.
        ValueError: invalid YAML or not a mapping; ``"<origin>: <invalid>: <errors>"`` for a spec
            ``model`` refuses.
    """
    origin = str(path) if path is not None else f"<{what}>"
    if data is None:
        if path is None:
            raise ValueError(f"give a {what} or its content")
        data = read_yaml_mapping(path, what=what)
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: expected a mapping at the top level")
    try:
        spec = model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{origin}: {invalid}: {format_errors(exc, model=model)}") from None
    if not isinstance(spec.base, str):
        return spec, dict(spec.base), None
    resolved = _resolve_base(spec.base, Path(path).resolve().parent if path is not None else None)
    return spec, read_yaml_mapping(resolved, what="base config"), str(resolved)


def load_sweep(path: str | os.PathLike | None = None, *, data: dict[str, Any] | None = None,
               max_points: int = MAX_SWEEP_POINTS) -> Sweep:
    """Read, validate and expand a sweep file (or a mapping given as ``data``).

    Raises:
        FileNotFoundError: the sweep file or its base config does not exist.
        ValueError: invalid YAML, an unknown key, a bad axis value or point (the message names the
            file, the axis or point, and the key).
    """
    origin = str(path) if path is not None else "<sweep>"
    spec, base, base_path = read_with_base(path, data, SweepFile, what="sweep file", invalid="invalid sweep")
    points = expand_sweep(spec, base, origin=origin, max_points=max_points)
    home = base.get("home") if isinstance(base.get("home"), str) else None
    return Sweep(name=spec.name, path=str(Path(path).resolve()) if path is not None else None, spec=spec, base=base,
                 base_path=base_path, points=points, home=home)


def point_config_path(sweep: Sweep, point: SweepPoint, root: str | os.PathLike | None = None) -> Path:
    return root_place(data_root(root), "sweeps", check_identifier(sweep.name, "sweep name"),
                      f"{check_identifier(point.point_id, 'point id')}.yaml")


def write_point_configs(sweep: Sweep, root: str | os.PathLike | None = None) -> dict[str, Path]:
    """Write every point's pipeline config (atomically) and file the points in the catalog.

    Returns point id -> config path. Points already in ``sweep_points`` keep their status; rows of
    points the sweep file no longer has are dropped (their pipeline runs stay in ``runs``).
    """
    paths: dict[str, Path] = {}
    for p in sweep.points:
        out = point_config_path(sweep, p, root)
        text = (f"# point {p.point_id} of sweep {sweep.name} ({sweep.path or 'inline'}): {p.label}\n"
                + yaml.safe_dump(p.config, sort_keys=False))
        if not out.is_file() or out.read_text() != text:
            with atomic_path(out) as tmp:
                tmp.write_text(text)
        paths[p.point_id] = out
    cat = Catalog(root)
    with cat.transaction() as con:
        con.execute("INSERT OR REPLACE INTO sweeps (sweep, path, base_path, spec, n_points) VALUES (?, ?, ?, ?, ?)",
                    [sweep.name, sweep.path, sweep.base_path, json.dumps(sweep.spec.model_dump(mode="json")),
                     len(sweep.points)])
        for p in sweep.points:
            con.execute(
                "INSERT INTO sweep_points (sweep, point_id, position, label, params, config_path, status) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending') ON CONFLICT (sweep, point_id) DO UPDATE SET "
                "position = excluded.position, label = excluded.label, params = excluded.params, "
                "config_path = excluded.config_path",
                [sweep.name, p.point_id, p.position, p.label, json.dumps(p.params, default=str), cat.rel(paths[p.point_id])])
        con.execute("DELETE FROM sweep_points WHERE sweep = ? AND NOT list_contains(?, point_id)",
                    [sweep.name, [p.point_id for p in sweep.points]])
    cat.keep_rows("sweep", [sweep.name])  # kept on disk: a rebuilt catalog has the sweep too
    return paths


def point_rows(sweep_name: str, root: str | os.PathLike | None = None) -> dict[str, dict[str, Any]]:
    """point id -> its ``sweep_points`` row (status, run id, config hash, ...)."""
    rows = Catalog(root).query("SELECT * FROM sweep_points WHERE sweep = ?", [sweep_name])
    return {r["point_id"]: r for r in rows}


def mark_interrupted_points(sweep_name: str, root: str | os.PathLike | None = None) -> int:
    """Points still 'running' whose process on this host is gone were killed: mark them 'interrupted'."""
    cat, n = Catalog(root), 0
    for r in point_rows(sweep_name, root).values():
        owner = json.loads(r["owner"] or "{}") if r["status"] == "running" else {}
        if owner.get("host") == socket.gethostname() and isinstance(owner.get("pid"), int) and not pid_alive(owner["pid"]):
            cat.execute("UPDATE sweep_points SET status = 'interrupted', ended_at = current_timestamp "
                        "WHERE sweep = ? AND point_id = ?", [sweep_name, r["point_id"]], keep=("sweep", [sweep_name]))
            n += 1
    return n


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did with each point (``ran``, ``skipped``, ``failed``)."""

    sweep: str
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


RunPoint = Callable[[SweepPoint, str, str], dict[str, Any]]


def run_sweep(sweep: Sweep, run_point: RunPoint, *, only: Sequence[str] | None = None, force: bool = False,
              fail_fast: bool = False, root: str | os.PathLike | None = None,
              on_point: Callable[[SweepPoint, str], None] | None = None, fan_out: FanOut = in_turn) -> SweepOutcome:
    """Run the sweep's points with ``run_point(point, config_path, run_id)`` (returns the pipeline's
    summary, ``status`` 'completed' or 'unchanged'), through ``fan_out(fn, calls)`` (default one
    after another). A point whose last run completed with the same config is skipped (``force``
    reruns it: cache hits). A point that raises is recorded as failed and the sweep goes on
    (``fail_fast`` stops); an interrupt (or its work cancelled) marks the point 'interrupted' and
    stops. A point is a whole pipeline run, which writes the catalog, so its call stays in the
    catalog's process (on a cluster the flows run points side by side, in threads); what goes to
    workers is inside it (each PST step's candidates, on the command's Dask cluster)."""
    t0 = time.perf_counter()
    paths = write_point_configs(sweep, root)
    mark_interrupted_points(sweep.name, root)
    chosen = list(sweep.points) if not only else [sweep.point(k) for k in only]
    done = point_rows(sweep.name, root)
    cat = Catalog(root)
    outcome = SweepOutcome(sweep=sweep.name)
    owner = json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
    todo = []
    for i, p in enumerate(chosen, 1):
        row = done.get(p.point_id) or {}
        if not force and row.get("status") == "completed" and row.get("config_hash") == p.config_hash:
            log.info("sweep %s: point %d/%d %s (%s) already completed in run %s: skipped", sweep.name, i, len(chosen),
                     p.point_id, p.label, row.get("run_id"))
            outcome.skipped.append(p.point_id)
            _ = on_point(p, "skipped") if on_point else None
        else:
            todo.append((i, p))

    def run_one(i: int, p: SweepPoint) -> tuple[str, str | None]:
        run_id = f"{p.name}-{uuid.uuid4().hex[:6]}"
        log.info("sweep %s: point %d/%d %s (%s): run %s", sweep.name, i, len(chosen), p.point_id, p.label, run_id)
        cat.execute("UPDATE sweep_points SET status = 'running', run_id = ?, config_hash = ?, owner = ?, "
                    "started_at = current_timestamp, ended_at = NULL, seconds = NULL, note = NULL "
                    "WHERE sweep = ? AND point_id = ?", [run_id, p.config_hash, owner, sweep.name, p.point_id],
                    keep=("sweep", [sweep.name]))
        t1 = time.perf_counter()
        status, note = "failed", None
        try:
            summary = run_point(p, str(paths[p.point_id]), run_id)
            status = "completed" if summary.get("status") in ("completed", "unchanged") else "failed"
            note = summary.get("note") or (None if status == "completed" else json.dumps(summary, default=str)[:1000])
        except (KeyboardInterrupt, SystemExit, CancelledError):
            status, note = "interrupted", "interrupted"
            raise
        except Exception as exc:  # noqa: BLE001 - one bad point must not end the sweep
            note = f"{type(exc).__name__}: {exc}"[:1000]
            log.error("sweep %s: point %s failed: %s", sweep.name, p.point_id, note)
            if fail_fast:
                raise
        finally:
            cat.execute("UPDATE sweep_points SET status = ?, note = ?, ended_at = current_timestamp, seconds = ? "
                        "WHERE sweep = ? AND point_id = ?",
                        [status, note, time.perf_counter() - t1, sweep.name, p.point_id], keep=("sweep", [sweep.name]))
        _ = on_point(p, status) if on_point else None
        return status, note

    for (_, p), (status, note) in zip(todo, fan_out(run_one, todo)):
        if status == "completed":
            outcome.ran.append(p.point_id)
        else:
            outcome.failed[p.point_id] = note or status
    outcome.seconds = time.perf_counter() - t0
    return outcome
