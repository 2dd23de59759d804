"""PNG figures for the run report: entry spaces, scores, harvested labels, PST progress.

Figures are drawn on a bare ``matplotlib.figure.Figure`` with the Agg canvas, never through
``pyplot``: no global backend switch, no GUI, safe in worker threads. Each PNG is written under a
temporary name and renamed into place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from defsentflow.entryspace.figures import new_figure, plot_entry_space, save_figure, svd_2d, whitened_pca_2d
from defsentflow.report.leaderboard import short_labels

__all__ = [
    "SMOOTHING",
    "ema",
    "loss_figure",
    "plot_entry_space",
    "plot_label_histogram",
    "plot_loss_curves",
    "plot_pst_progress",
    "plot_scores",
    "score_figure",
    "score_window",
    "seed_spread",
    "svd_2d",
    "whitened_pca_2d",
]

def _score_panels(rows: Sequence[Mapping[str, Any]], cols: Sequence[str]) -> list[tuple[list[str], str]]:
    """Columns split by scale: Spearman x 100 (values above 1.5) and MRR-like figures in [0, 1]."""
    big = [c for c in cols if max(abs(float(r[c])) for r in rows if r.get(c) is not None) > 1.5]
    small = [c for c in cols if c not in big]
    return [(g, t) for g, t in ((big, "Spearman x 100"), (small, "MRR / rate (0 to 1)")) if g]


def score_figure(rows: Sequence[Mapping[str, Any]], *, columns: Sequence[str] | None = None,
                 label_key: str = "label", title: str | None = None) -> Any:
    """The figure :func:`plot_scores` saves (a ``matplotlib`` Figure)."""
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k, v in r.items() if isinstance(v, (int, float))
                                     and not isinstance(v, bool) and not k.startswith("n_")))
    cols = [c for c in columns if any(r.get(c) is not None for r in rows)]
    if not rows or not cols:
        raise ValueError("plot_scores: no scores to draw")
    panels = _score_panels(rows, cols)
    labels, notes = short_labels(cols)
    fig = new_figure(max(5.5, 1.6 + 1.0 * len(cols) * max(1, len(rows)) ** 0.5), 3.8)
    axes = fig.subplots(1, len(panels), width_ratios=[len(g) + 0.6 for g, _ in panels], squeeze=False)[0]
    width = 0.8 / len(rows)
    for ax, (group, ylabel) in zip(axes, panels):
        xs = np.arange(len(group))
        for i, r in enumerate(rows):
            vals = [np.nan if r.get(c) is None else float(r[c]) for c in group]
            label = str(r.get(label_key) or r.get("model_id"))
            bars = ax.bar(xs + (i - (len(rows) - 1) / 2) * width, vals, width, label=label, color=f"C{i}")
            if len(rows) <= 4:  # the figures as the leaderboard writes them: a 0.1-point gain reads as one
                fmt = "{:.2f}" if ylabel.startswith("Spearman") else "{:.4f}"
                ax.bar_label(bars, labels=["" if np.isnan(v) else fmt.format(v) for v in vals], fontsize=6.5,
                             padding=1)
        ax.set_xticks(xs, ["\n".join(w for w in labels[c] if w) for c in group], fontsize=7.5)
        finite = [float(r[c]) for r in rows for c in group if r.get(c) is not None]
        lo, hi = min(finite), max(finite)
        # From zero: a bar's length is its value, so a difference of a tenth of a point looks like one.
        ax.set_ylim(min(0.0, lo * 1.1), max(hi * 1.12, 0.05) if hi > 0 else 0.05)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, axis="y", linewidth=0.3, alpha=0.5)
    if title or notes:
        fig.suptitle("; ".join([*([title] if title else []), *notes]), fontsize=9)
    handles, legend = axes[0].get_legend_handles_labels()
    fig.legend(handles, legend, fontsize=7, loc="outside lower center", ncol=min(3, len(rows)))
    return fig


def plot_scores(rows: Sequence[Mapping[str, Any]], out_png: str | os.PathLike, *,
                columns: Sequence[str] | None = None, label_key: str = "label", title: str | None = None) -> Path:
    """Grouped bars from zero: one group per score column, one bar per row (model), each labelled
    with its figure (2 decimals for Spearman x 100, 4 for MRR, as the leaderboard).

    Columns on different scales (STS Spearman x 100, reverse-dictionary MRR in [0, 1]) get their
    own panels; ticks are short names (:func:`~defsentflow.report.leaderboard.short_labels`), what a
    task's columns share is in the title. ``columns`` default: every numeric key some row holds
    except ``n_*`` counts.

    Raises:
        ValueError: no row holds a value in any of the columns (no chart without data).
    """
    return save_figure(score_figure(rows, columns=columns, label_key=label_key, title=title), out_png)


def plot_label_histogram(out_png: str | os.PathLike, *,
                         values: np.ndarray | Mapping[str, np.ndarray] | None = None,
                         edges: Sequence[float] | None = None, counts: Sequence[float] | None = None,
                         title: str = "harvested pair labels", bins: int = 40) -> Path:
    """Histogram of harvested similarity labels.

    Args:
        values: raw labels, or ``{group: labels}`` (e.g. by pair kind) drawn overlaid on shared bins.
        edges, counts: a precomputed histogram (``harvest_stats.histogram``) when values are absent.
    """
    fig = new_figure(5.5, 3.4)
    ax = fig.subplots()
    if values is not None:
        groups = dict(values) if isinstance(values, Mapping) else {"pairs": values}
        groups = {k: np.asarray(v, dtype=np.float64) for k, v in groups.items()}
        groups = {k: v[np.isfinite(v)] for k, v in groups.items() if np.isfinite(v).any()}
        if not groups:
            raise ValueError("plot_label_histogram: no finite label values")
        edges_arr = np.histogram_bin_edges(np.concatenate(list(groups.values())), bins=bins)
        for name, v in groups.items():
            ax.stairs(np.histogram(v, bins=edges_arr)[0], edges_arr, fill=len(groups) == 1, alpha=0.7,
                      label=f"{name} ({len(v)})", linewidth=1.2)
        if len(groups) > 1:
            ax.legend(fontsize=7)
    elif edges is not None and counts is not None:
        edges_arr, counts_arr = np.asarray(edges, dtype=np.float64), np.asarray(counts, dtype=np.float64)
        if len(edges_arr) != len(counts_arr) + 1:
            raise ValueError(f"histogram needs len(edges) == len(counts) + 1, got {len(edges_arr)} and {len(counts_arr)}")
        ax.stairs(counts_arr, edges_arr, fill=True, alpha=0.7, color="#9467bd")
    else:
        raise ValueError("plot_label_histogram needs values, or edges and counts")
    ax.set_xlabel("label (pair similarity)")
    ax.set_ylabel("pairs")
    ax.set_title(title, fontsize=10)
    ax.grid(True, linewidth=0.3, alpha=0.5)
    return save_figure(fig, out_png)


def seed_spread(rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, float, float]]:
    """``(step, mean, sd)`` of every combination (pooling, entry encoding, ICA) scored with two or more seeds."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        if r.get("selection_score") is not None and r.get("step", 0) >= 1:
            key = (r["step"], r.get("pooling"), r.get("entry_encoding"), r.get("ica"), r.get("lr"))
            groups.setdefault(key, []).append(float(r["selection_score"]))
    return [(k[0], float(np.mean(v)), float(np.std(v, ddof=1))) for k, v in sorted(groups.items(), key=str) if len(v) > 1]


def score_window(scores: Sequence[float], sds: Sequence[float]) -> tuple[float, float]:
    """The y-range of a score plot: every score, at least four seed standard deviations, and never
    narrower than 2 points of Spearman x100 (0.02 of an MRR): a +0.10 change must look small."""
    lo, hi = min(scores), max(scores)
    floor = 2.0 if max(abs(s) for s in scores) > 1.5 else 0.02
    span = max(hi - lo, floor, 4 * max(sds, default=0.0))
    pad = (span - (hi - lo)) / 2 + 0.08 * span
    return lo - pad, hi + pad


SMOOTHING = 0.9
"""The loss curves' exponential moving average weight (TensorBoard's default slider value)."""


def ema(values: Sequence[float], smoothing: float = SMOOTHING) -> np.ndarray:
    """TensorBoard's smoothing: an exponential moving average of ``values``, debiased so its first
    points are not pulled towards zero (``s_t = w s_{t-1} + (1 - w) x_t``, shown as ``s_t / (1 - w^t)``)."""
    out, last = np.empty(len(values)), 0.0
    for i, x in enumerate(values):
        last = smoothing * last + (1 - smoothing) * float(x)
        out[i] = last / (1 - smoothing ** (i + 1))
    return out


def loss_figure(curves: Mapping[str, Sequence[float]], *, title: str = "training loss per candidate",
                smoothing: float = SMOOTHING) -> Any:
    """The figure :func:`plot_loss_curves` saves (a ``matplotlib`` Figure)."""
    curves = {k: [float(x) for x in v] for k, v in curves.items() if v}
    if not curves:
        raise ValueError("plot_loss_curves: no losses to draw")
    n = len(curves)
    ncols = min(n, 3)
    nrows = -(-n // ncols)
    fig = new_figure(3.2 * ncols + 0.6, 2.3 * nrows + 0.7)
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False).ravel()
    for i, (ax, (label, losses)) in enumerate(zip(axes, curves.items())):
        steps = np.arange(1, len(losses) + 1)
        ax.plot(steps, losses, linewidth=0.7, color=f"C{i % 10}", alpha=0.25, label="per step")
        ax.plot(steps, ema(losses, smoothing), linewidth=1.6, color=f"C{i % 10}", label=f"EMA {smoothing:g}")
        ax.set_title(label, fontsize=7.5)
        ax.grid(True, linewidth=0.3, alpha=0.5)
        ax.legend(fontsize=6, loc="upper right")
    for ax in axes[n:]:
        ax.set_axis_off()
    for ax in axes[(nrows - 1) * ncols:]:
        ax.set_xlabel("optimizer step", fontsize=8)
    for ax in axes[::ncols]:
        ax.set_ylabel("training loss", fontsize=8)
    fig.suptitle(f"{title}: exponential moving average (smoothing {smoothing:g}, as TensorBoard) over the "
                 "per-step loss (faint); one panel per candidate, shared axes", fontsize=8.5)
    return fig


def plot_loss_curves(curves: Mapping[str, Sequence[float]], out_png: str | os.PathLike, *,
                     title: str = "training loss per candidate") -> Path:
    """One panel per trained candidate, all on the same axes: its loss at every optimizer step,
    faint, under its exponential moving average (:func:`ema`, TensorBoard's smoothing).

    Raises:
        ValueError: no curve with a loss (no chart without data).
    """
    return save_figure(loss_figure(curves, title=title), out_png)


def plot_pst_progress(rows: Sequence[Mapping[str, Any]], out_png: str | os.PathLike, *,
                      title: str = "selection score per step") -> Path:
    """Selection score of every candidate per step (chosen ones joined) and the entry space's IsoScore."""
    fig = new_figure(6.5, 3.6)
    ax = fig.subplots()
    steps = [r["step"] for r in rows if r.get("selection_score") is not None]
    if not steps:
        ax.text(0.5, 0.5, "no PST steps recorded", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return save_figure(fig, out_png)
    scores = [float(r["selection_score"]) for r in rows if r.get("selection_score") is not None]
    ax.scatter(steps, scores, s=14, color="#7f7f7f", label="candidates")
    spread = seed_spread(rows)
    for step, mean, sd in spread:  # mean +- sd over the seeds of one combination at one step
        ax.errorbar([step + 0.08], [mean], yerr=[sd], fmt="_", color="#2ca02c", capsize=3, linewidth=1.2,
                    label="seed mean ± sd" if (step, mean, sd) == spread[0] else None)
    best = lambda r: r.get("step_best", r.get("chosen"))  # noqa: E731  (rows from pst_steps have only 'chosen')
    chosen = sorted((r["step"], r["selection_score"]) for r in rows if best(r) and r.get("selection_score") is not None)
    if chosen:
        ax.plot(*zip(*chosen), marker="o", color="#1f77b4", label="best of each step")
    won = [(r["step"], r["selection_score"]) for r in rows if r.get("step_best") is not None and r.get("chosen")
           and r.get("selection_score") is not None]
    if won:
        ax.scatter(*zip(*won), s=80, facecolors="none", edgecolors="#d62728", linewidths=1.5, label="returned", zorder=3)
    metric = next((r.get("selection_metric") for r in rows if r.get("selection_metric")), None) or "selection score"
    window = score_window(scores, [sd for _, _, sd in spread])
    ax.set_ylim(*window)
    ax.set_xlabel("PST step")
    ax.set_ylabel(f"{metric} (window {window[1] - window[0]:.3g})")
    iso = sorted({(r["step"], r["isoscore"]) for r in rows if r.get("isoscore") is not None and best(r)})
    if iso:
        ax2 = ax.twinx()
        ax2.plot(*zip(*iso), marker="s", linestyle="--", color="#ff7f0e", label="IsoScore (best of step)")
        ax2.set_ylabel("IsoScore")
        ax2.set_ylim(0, 1)
        ax2.legend(loc="lower right", fontsize=7)
    ax.set_xticks(sorted(set(steps)))
    ax.legend(loc="upper left", fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.grid(True, linewidth=0.3, alpha=0.5)
    return save_figure(fig, out_png)
