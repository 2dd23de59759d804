"""Read-only catalog access for the web app: served indexes, runs, reports, sweeps.

A request names a model by its catalog id (or an alias, ``demo@champion``: :mod:`defsentflow.serve.aliases`
resolves it at request time); the index it is served from is found here, in the ``artifacts`` table
(kind ``revdict_index``), never from a path in the request. Report files
are served only from the folder the catalog records for a run, by names checked to stay inside it.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from defsentflow.encoders.loading import resolve_model_path
from defsentflow.registry.gate import shown_decision
from defsentflow.storage import Catalog
from defsentflow.storage.identifiers import ALIAS_PATTERN
from defsentflow.storage.paths import OutsideRootError, from_root, inside_root
from defsentflow.storage.runs import shown

__all__ = ["ServedIndex", "ServeCatalog", "ID_PATTERN", "MODEL_PATTERN", "UnknownModelError"]

# Ids of models, runs and sweeps as the project writes them (pst-demo-78a6f724, base:all-MiniLM-L6-v2).
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:+\-]{0,199}$"
_ID = re.compile(ID_PATTERN)
# What the API's model= takes: a model id, or an alias (CONFIG@LABEL, storage.identifiers.ALIAS_PATTERN).
MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:+\-]{0,199}$|" + ALIAS_PATTERN
_RUN_FIELDS = ("run_id", "flow", "status", "reason", "started_at", "ended_at", "name", "seconds", "selected_model",
               "selection_metric", "selection_score", "has_report", "champion", "promotion_note")
_REPORT_SUFFIXES = {".html": "text/html", ".md": "text/markdown", ".png": "image/png"}


class UnknownModelError(LookupError):
    """No reverse-dictionary index is served for the requested model (or mode)."""


@dataclass(frozen=True)
class ServedIndex:
    """One servable reverse-dictionary index of one model."""

    model_id: str           # the model's display id (see the model_aliases view)
    aliases: tuple[str, ...]
    key: str                # the index artifact key
    path: str               # the index folder (from the catalog)
    dictionary: str | None
    mode: str
    n_entries: int
    measured_mrr: float | None   # the model's dev-split MRR in this mode, when evaluated

    @property
    def label(self) -> str:
        mrr = "" if self.measured_mrr is None else f", dev MRR {self.measured_mrr:.3f}"
        return f"{self.model_id} ({self.dictionary or 'table'}, {self.mode}, {self.n_entries:,} entries{mrr})"


def _folder(path: str) -> str:
    """The folder a stored model reference names here: a model made elsewhere is filed by its name
    (``minilm``: :func:`~defsentflow.encoders.loading.portable_model_name`), a model of the root by its path."""
    try:
        return resolve_model_path(path) if path else path
    except FileNotFoundError:  # the bundled extra is not installed here
        return path


def _bundled_name(path: str) -> str | None:
    """``minilm`` for the bundled MiniLM's directory (a model no catalog row names)."""
    try:
        return "minilm" if str(Path(resolve_model_path("minilm")).resolve()) == str(Path(path).resolve()) else None
    except (FileNotFoundError, OSError):
        return None


class ServeCatalog:
    """The catalog of a data root, read with short read-only connections.

    Example:
        >>> sc = ServeCatalog("storage")
        >>> [i.label for i in sc.indexes()]
    """

    def __init__(self, root: str | os.PathLike | None = None, *, lock_timeout: float = 10.0, ttl: float = 30.0,
                 query_timeout: float | None = 30.0):
        # A reader: opens read-only, never creates the catalog or applies schema changes, and
        # interrupts a read after ``query_timeout`` seconds (a read-only data root serves too).
        self.catalog = Catalog(root, lock_timeout=lock_timeout, reader=True, query_timeout=query_timeout)
        self.ttl = ttl
        self._lock = threading.Lock()
        self._cache: tuple[float, list[ServedIndex]] | None = None

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        import duckdb  # lazy: duckdb loads only where it is used

        if not self.catalog.path.is_file():
            return []
        try:
            return self.catalog.query(sql, params)
        except duckdb.CatalogException:  # a catalog older than the sql/*.sql file defining the view or table
            return []

    # -- indexes ------------------------------------------------------------------------------
    def indexes(self, refresh: bool = False) -> list[ServedIndex]:
        """Every index on disk whose model is known, newest extension only; best measured first."""
        with self._lock:
            if not refresh and self._cache and time.monotonic() - self._cache[0] < self.ttl:
                return self._cache[1]
        rows = self.query(
            "SELECT a.artifact_key, a.path, a.name, a.config, a.created_at FROM artifacts AS a "
            "WHERE a.kind = 'revdict_index' AND NOT EXISTS (SELECT 1 FROM artifacts AS b WHERE b.kind = 'revdict_index' "
            "AND json_extract_string(b.input_hashes, '$.extends') = a.artifact_key) ORDER BY a.created_at DESC")
        by_path = {}
        # an alias (demo@champion) is resolved at request time, never from this cached list
        for r in self.query("SELECT a.path, a.display_id, list_sort(list(DISTINCT a.model_id)) AS aliases "
                            "FROM model_ids AS a WHERE a.path IS NOT NULL AND NOT contains(a.model_id, '@') GROUP BY ALL"):
            by_path.setdefault(_folder(r["path"]), (r["display_id"], tuple(r["aliases"])))
        # which index of a model to serve is a choice: it reads dev figures only
        mrr = {(r["model_id"], r["setting"]): r["mrr"] for r in self.query(
            "SELECT s.model_id, s.setting, s.value AS mrr FROM model_scores AS s "
            "WHERE task_base(s.task) = 'revdict-dev' AND s.metric = 'mrr' ORDER BY s.created_at")}
        out = []
        for r in rows:
            cfg = json.loads(r["config"]) if isinstance(r["config"], str) else (r["config"] or {})
            model = _folder(from_root(self.catalog.root, str(cfg.get("model") or "")))  # root-relative, or a name
            if not model or not self._inside(r["path"]) or not (Path(r["path"]) / "index.faiss").is_file():
                continue
            bundled = _bundled_name(model)
            display, aliases = by_path.get(model) or (bundled, ())
            if not display:
                continue
            aliases = (*aliases, bundled) if bundled else aliases
            mode = str(cfg.get("mode") or "cosine")
            out.append(ServedIndex(display, tuple(dict.fromkeys((display, *aliases))), r["artifact_key"], r["path"],
                                   cfg.get("name") or r["name"], mode, int(cfg.get("n_entries") or 0),
                                   mrr.get((display, mode))))
        out.sort(key=lambda i: (i.model_id, -(i.measured_mrr if i.measured_mrr is not None else -1.0)))
        with self._lock:
            self._cache = (time.monotonic(), out)
        return out

    def resolve(self, model: str, mode: str | None = None, dictionary: str | None = None) -> ServedIndex:
        """The index served for ``model`` (any of its ids): the given mode/dictionary, else the mode
        with the best dev-split MRR, else the newest index.

        Raises:
            UnknownModelError: no index is served for it; the message lists the served models.
        """
        if not _ID.match(model):
            raise UnknownModelError(f"invalid model id {model!r}")
        found = [i for i in self.indexes() if model in i.aliases]
        if not found:
            found = [i for i in self.indexes(refresh=True) if model in i.aliases]
        picked = [i for i in found if (mode in (None, "auto") or i.mode == mode)
                  and (dictionary is None or i.dictionary == dictionary)]
        if not picked:
            served = sorted({i.model_id for i in self.indexes()})
            what = f"model {model!r}" + (f" in mode {mode!r}" if mode not in (None, "auto") else "") + \
                   (f" over dictionary {dictionary!r}" if dictionary else "")
            raise UnknownModelError(f"no reverse-dictionary index is served for {what}; served models: "
                                    f"{', '.join(served) or 'none (build one: defsentflow revdict MODEL ...)'}")
        return max(picked, key=lambda i: (i.measured_mrr if i.measured_mrr is not None else -1.0))

    def alias_holders(self, alias: str | None = None) -> list[dict[str, Any]]:
        """Each alias (or ``alias``) with the model it names and since when (``alias_holders``, read now)."""
        where, params = ("WHERE alias = ?", [alias]) if alias else ("", [])
        return self.query(f"SELECT alias, model_id, since FROM alias_holders {where} ORDER BY alias", params)

    def aliases_served(self, indexes: list[ServedIndex]) -> dict[str, list[dict[str, Any]]]:
        """Index model id -> the aliases that name its model now (any of its ids), each ``{alias,
        model_id, since}`` with ``since`` to the second; read now: an alias moves without a restart."""
        held: dict[str, list[dict[str, Any]]] = {}
        for h in self.alias_holders():
            held.setdefault(h["model_id"], []).append({**h, "since": str(h["since"])[:19]})
        return {i.model_id: [a for m in i.aliases for a in held.get(m, [])] for i in indexes}

    def _inside(self, path: str) -> bool:
        """Whether ``path`` lies inside the data root once its links are followed (else never served)."""
        try:
            inside_root(self.catalog.root, path)
        except OutsideRootError:
            return False
        return True

    # -- runs, reports, sweeps ---------------------------------------------------------------
    def runs(self, limit: int = 100) -> list[dict[str, Any]]:
        # r.* (not named columns): a catalog written before the owner columns still lists its runs
        rows = self.query(
            "SELECT r.* EXCLUDE (config), json_extract_string(r.config, '$.name') AS name, "
            "round(epoch(r.ended_at - r.started_at), 1) AS seconds, p.model_id AS selected_model, "
            "p.selection_metric, p.selection_score, "
            "(SELECT a.path FROM artifacts AS a WHERE a.kind = 'report' AND a.run_id = r.run_id "
            " ORDER BY a.created_at DESC LIMIT 1) AS report_dir "
            "FROM runs AS r LEFT JOIN pst_runs AS p USING (run_id) ORDER BY r.started_at DESC LIMIT ?", [limit])
        out = []
        for r in rows:
            r = shown(r)  # a run whose process is gone: interrupted; a failed one: its reason
            r["has_report"] = bool(r.pop("report_dir", None))
            r["champion"] = shown_decision(r.get("promotion"), r.get("promotion_why"))  # kept: worse, promoted: better
            out.append({k: r.get(k) for k in _RUN_FIELDS})
        return out

    def report_file(self, run_id: str, name: str) -> tuple[Path, str] | None:
        """``(file, media type)`` of a file in the run's report folder, or None.

        ``name`` is relative (``report.html``, ``img/headline.png``); anything resolving outside
        the folder, of another type, or missing is refused.
        """
        if not _ID.match(run_id) or not name or len(name) > 200 or "\\" in name or name.startswith("/"):
            return None
        rows = self.query("SELECT path FROM artifacts WHERE kind = 'report' AND run_id = ? "
                          "ORDER BY created_at DESC LIMIT 1", [run_id])
        if not rows:
            return None
        try:  # the folder itself must lie inside the data root (a report folder replaced by a link leads out)
            base = inside_root(self.catalog.root, rows[0]["path"])
        except OutsideRootError:
            return None
        target = (base / name).resolve()
        media = _REPORT_SUFFIXES.get(target.suffix.lower())
        if media is None or not target.is_relative_to(base) or not target.is_file():
            return None
        return target, media

    def sweeps(self) -> list[dict[str, Any]]:
        return self.query("SELECT sweep, n_points, updated_at FROM sweeps ORDER BY updated_at DESC")

    def sweep_results(self, sweep: str) -> list[dict[str, Any]]:
        if not _ID.match(sweep):
            return []
        # every column of the view (it grows with new tasks), less the ones repeated or internal
        rows = self.query("SELECT * FROM sweep_results WHERE sweep = ? ORDER BY position", [sweep])
        return [{k: v for k, v in r.items() if k not in ("sweep", "point_id", "params")} for r in rows]
