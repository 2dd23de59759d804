"""A sweep's settings aggregated over seeds, as DefSent picks its learning rate.

DefSent (Tsukagoshi et al., 2021) trains every learning rate with ten seeds, picks the rate whose
*mean* dev figure over its seeds is highest, and reports that rate's test mean +- sd. A sweep
file with ``aggregate: mean_over_seeds`` does the same: points that differ only in ``seed_key``
are one setting; settings are ranked by their dev mean (``select_on``); the ``report_on`` test
figures are given as mean +- sd over the same seeds and are never ranked on.

Example:
    >>> rank_settings([{"point": {"lr": 1, "seed": 0}, "dev": 0.5, "test": {"t:m": 0.4}}], "seed")[0]["dev_mean"]
    0.5
"""

from __future__ import annotations

import json
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from defsentflow.config_tools import ConfigSection

__all__ = ["SeedAggregation", "catalog_figure", "rank_settings", "seed_rows"]


class SeedAggregation(ConfigSection):
    """The sweep file's aggregation keys (:class:`defsentflow.sweep.SweepFile` inherits them)."""

    aggregate: Literal["point", "mean_over_seeds"] = Field(
        "point", description="point: rank single points; mean_over_seeds: points differing only in seed_key are one "
                             "setting, chosen by its dev mean over the seeds")
    seed_key: str = Field("defsent.seed", description="mean_over_seeds: the axis whose values are seeds")
    select_on: str | None = Field(None, description="mean_over_seeds: the dev figure 'task:metric' (e.g. "
                                                    "wordpred-dev-alldefs:mrr@10); None: each point's dev selection")
    report_on: list[str] = Field(default_factory=list,
                                 description="mean_over_seeds: test figures 'task:metric', reported as mean +- sd")

    @model_validator(mode="after")
    def _aggregation(self) -> SeedAggregation:
        axes = getattr(self, "axes", None)   # None: the aggregation keys alone (read back from a stored spec)
        if self.aggregate == "mean_over_seeds" and axes is not None and self.seed_key not in axes:
            raise ValueError(f"aggregate: mean_over_seeds needs seed_key {self.seed_key!r} as an axis (axes: {sorted(axes)})")
        for figure in [*([self.select_on] if self.select_on else []), *self.report_on]:
            parts = figure.split(":")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"figure {figure!r} is not 'task:metric'")
        return self


def _stats(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)


def rank_settings(points: list[dict[str, Any]], seed_key: str) -> list[dict[str, Any]]:
    """Settings (the points' values without ``seed_key``) ranked by their mean dev figure, best first.

    Args:
        points: ``{"point": {key: value}, "dev": float | None, "test": {figure: float | None}}`` per
            completed point.

    Returns:
        Per setting: ``setting`` (its values), ``seeds``, ``n_dev`` (seeds with a dev figure),
        ``dev_mean``, ``dev_sd`` and ``test`` (figure -> ``(mean, sd, n)``); a setting missing a
        seed's dev figure ranks below every complete one.
    """
    groups: dict[str, dict[str, Any]] = {}
    for p in points:
        setting = {k: v for k, v in p["point"].items() if k != seed_key}
        g = groups.setdefault(json.dumps(setting, sort_keys=True, default=str),
                              {"setting": setting, "seeds": [], "dev": [], "test": {}})
        g["seeds"].append(p["point"].get(seed_key))
        if p["dev"] is not None:
            g["dev"].append(float(p["dev"]))
        for fig, v in p.get("test", {}).items():
            if v is not None:
                g["test"].setdefault(fig, []).append(float(v))
    out = []
    for g in groups.values():
        mean, sd = _stats(g["dev"])
        out.append({"setting": g["setting"], "seeds": g["seeds"], "n_dev": len(g["dev"]), "dev_mean": mean,
                    "dev_sd": sd, "test": {f: (*_stats(v), len(v)) for f, v in g["test"].items()}})
    return sorted(out, key=lambda g: (g["n_dev"] < len(g["seeds"]), g["dev_mean"] is None, -(g["dev_mean"] or 0.0)))


def catalog_figure(cat: Any, model_id: str | None, figure: str) -> float | None:
    """The newest value of ``figure`` ('task:metric', any pooling) for ``model_id``: STS's 'all' setting
    (not the mean over subsets) where the task has it, else any setting."""
    if not model_id:
        return None
    task, metric = figure.split(":")
    got = cat.query("SELECT value AS v FROM metrics WHERE model_id = ? AND task = ? AND metric = ? "
                    "ORDER BY (setting = 'all') DESC, created_at DESC LIMIT 1", [model_id, task, metric])
    return got[0]["v"] if got else None


def seed_rows(cat: Any, results: list[dict[str, Any]], spec: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`rank_settings` over a sweep's completed ``sweep_results`` rows, figures read from the catalog."""
    agg = SeedAggregation.model_validate({k: spec[k] for k in SeedAggregation.model_fields if k in spec})
    points = []
    for r in results:
        if r["status"] != "completed":
            continue
        params = json.loads(r["params"]) if isinstance(r["params"], str) else r["params"]
        dev = catalog_figure(cat, r["trained_model_id"], agg.select_on) if agg.select_on else r["trained_selection"]
        points.append({"point": params, "dev": dev,
                       "test": {f: catalog_figure(cat, r["trained_model_id"], f) for f in agg.report_on}})
    return rank_settings(points, agg.seed_key)
