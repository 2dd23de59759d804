"""Figures are written as readable PNGs (and nothing is left under a temporary name)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.image import imread

from defsentflow.report.plots import (
    plot_entry_space,
    plot_label_histogram,
    plot_pst_progress,
    plot_scores,
    svd_2d,
    whitened_pca_2d,
)


def _is_png(path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_projections():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 6)) * np.r_[5.0, 2.0, 1, 1, 1, 1] + 10.0
    w = whitened_pca_2d(x)
    np.testing.assert_allclose(w.std(0, ddof=1), [1.0, 1.0], rtol=1e-9)
    np.testing.assert_allclose(w.mean(0), [0.0, 0.0], atol=1e-9)
    s = svd_2d(x)
    assert abs(s[:, 0].mean()) > 5 * s[:, 0].std()  # uncentred: the offset dominates the first direction


def test_entry_space_plot(tmp_path):
    rng = np.random.default_rng(1)
    out = plot_entry_space(rng.normal(size=(7000, 8)) + 1.0, tmp_path / "a" / "step-01.png", "PST step 1",
                           stats={"avg_cosine": 0.5, "top1_var_share": 0.2, "isoscore": 0.7})
    assert out.is_file() and _is_png(out)
    h, w, _ = imread(out).shape
    assert w > 600 and h > 300
    assert [p.name for p in out.parent.iterdir()] == ["step-01.png"]
    with pytest.raises(ValueError, match="plot_entry_space needs"):
        plot_entry_space(np.ones((2, 3)), tmp_path / "bad.png", "x")


def test_score_histogram_and_progress_plots(tmp_path):
    rows = [{"model_id": "minilm", "sts12": 72.4, "sts13": 80.6, "stsb_dev": 86.7, "avg_sts": 76.5},
            {"model_id": "pst-1", "label": "pst-1 [cls]", "sts12": 60.0, "sts13": None, "avg_sts": 60.0}]
    assert _is_png(plot_scores(rows, tmp_path / "scores.png"))
    both = [{"model_id": "base", "stsb_dev": 86.7, "revdict_cosine_mrr": 0.48},
            {"model_id": "pst", "stsb_dev": 86.8, "revdict_cosine_mrr": 0.55, "n_avg": 7}]
    assert _is_png(plot_scores(both, tmp_path / "two-scales.png"))  # Spearman and MRR panels
    with pytest.raises(ValueError, match="no scores to draw"):  # no chart without data
        plot_scores([], tmp_path / "empty.png")
    with pytest.raises(ValueError, match="no scores to draw"):
        plot_scores([{"model_id": "m", "sts12": None}], tmp_path / "none.png", columns=["sts12"])
    rng = np.random.default_rng(2)
    assert _is_png(plot_label_histogram(tmp_path / "h1.png", values={"neighbour": rng.uniform(0.5, 1, 200),
                                                                    "random": rng.uniform(0, 0.6, 200)}))
    assert _is_png(plot_label_histogram(tmp_path / "h2.png", edges=[0, 0.5, 1], counts=[3, 5]))
    with pytest.raises(ValueError, match="len\\(edges\\) == len\\(counts\\) \\+ 1"):
        plot_label_histogram(tmp_path / "h3.png", edges=[0, 1], counts=[3, 5])
    steps = [{"step": 0, "selection_score": 70.0, "chosen": True, "selection_metric": "stsb-dev"},
             {"step": 1, "selection_score": 74.0, "chosen": False, "isoscore": 0.2},
             {"step": 1, "selection_score": 76.0, "chosen": True, "isoscore": 0.3}]
    assert _is_png(plot_pst_progress(steps, tmp_path / "p.png"))
    assert _is_png(plot_pst_progress([], tmp_path / "p0.png"))


def test_the_pst_window_shows_the_seed_spread_never_a_tenth_of_a_point(tmp_path):
    from defsentflow.report.plots import plot_loss_curves, score_window, seed_spread

    lo, hi = score_window([80.0, 80.1], [])
    assert hi - lo >= 2.0 and lo < 80.0 and hi > 80.1  # one seed: at least 2 points of Spearman x100
    lo, hi = score_window([0.500, 0.501], [])
    assert hi - lo >= 0.02  # an MRR: at least 0.02
    rows = [{"step": 1, "seed": s, "pooling": "mean", "entry_encoding": "amp", "lr": 1e-5, "selection_score": v}
            for s, v in enumerate([79.0, 80.0, 81.5])]
    ((step, mean, sd),) = seed_spread(rows)
    assert step == 1 and mean == pytest.approx(80.1667, abs=1e-3) and sd == pytest.approx(1.2583, abs=1e-3)
    lo, hi = score_window([r["selection_score"] for r in rows], [sd])
    assert hi - lo >= 4 * sd
    out = plot_loss_curves({"a": [2.0, 1.0], "b": [3.0, 2.0, 1.5]}, tmp_path / "loss.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="no losses"):
        plot_loss_curves({"a": []}, tmp_path / "none.png")


def test_bars_start_at_zero_with_the_leaderboards_decimals_and_short_names():
    from defsentflow.report.plots import score_figure

    rows = [{"label": "untrained", "stsb_dev_spearman": 86.72, "revdict_test_unseen_cosine_mrr": 0.4864,
             "revdict_test_unseen_head_mrr": 0.0100},
            {"label": "selected", "stsb_dev_spearman": 86.82, "revdict_test_unseen_cosine_mrr": 0.5555,
             "revdict_test_unseen_head_mrr": 0.5403}]
    fig = score_figure(rows)
    sts, mrr = fig.axes[:2]
    assert sts.get_ylim()[0] == 0 and mrr.get_ylim()[0] == 0  # a 0.1-point gain looks like one
    assert [t.get_text() for t in sts.texts] == ["86.72", "86.82"] and "0.0100" in [t.get_text() for t in mrr.texts]
    assert [t.get_text() for t in mrr.get_xticklabels()] == ["revdict test\ncosine", "revdict test\nhead"]
    assert "revdict: unseen mrr" in fig._suptitle.get_text()


def test_loss_curves_are_smoothed_over_a_faint_trace_one_panel_each_on_shared_axes():
    from defsentflow.report.plots import SMOOTHING, ema, loss_figure

    rng = np.random.default_rng(0)
    losses = list(np.linspace(2.0, 0.5, 60) + rng.normal(0, 0.4, 60))
    last, slow = 0.0, []  # TensorBoard's debiased EMA, written out
    for i, x in enumerate(losses):
        last = SMOOTHING * last + (1 - SMOOTHING) * x
        slow.append(last / (1 - SMOOTHING ** (i + 1)))
    assert ema(losses) == pytest.approx(slow) and ema(losses)[0] == pytest.approx(losses[0])
    fig = loss_figure({"step 1 seed 0": losses, "step 2 seed 0": losses[:40], "step 3 seed 0": losses[:20]})
    axes = [ax for ax in fig.axes if ax.lines]
    assert len(axes) == 3 and all(ax.get_ylim() == axes[0].get_ylim() for ax in axes)  # shared axes
    for ax in axes:
        raw, smooth = ax.lines
        assert raw.get_alpha() < 0.5 and smooth.get_alpha() is None and smooth.get_linewidth() > raw.get_linewidth()
        assert list(smooth.get_ydata()) == pytest.approx(list(ema(raw.get_ydata())))
    assert "moving average (smoothing 0.9" in fig._suptitle.get_text()
