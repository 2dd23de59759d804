"""A sweep aggregated over seeds picks the setting by its dev mean, as DefSent picks its lr."""

import pytest

from defsentflow.sweep import SweepFile
from defsentflow.sweep_seeds import rank_settings


def _p(lr, seed, dev, test):
    return {"point": {"defsent.lr": lr, "defsent.seed": seed}, "dev": dev, "test": {"wordpred-alldefs:mrr@10": test}}


def test_the_setting_with_the_best_dev_mean_wins_not_the_best_single_point():
    points = [_p(1e-5, 0, 0.90, 0.10), _p(1e-5, 1, 0.10, 0.20),      # best single point, mean 0.50
              _p(2e-5, 0, 0.60, 0.30), _p(2e-5, 1, 0.60, 0.50),      # mean 0.60: chosen
              _p(4e-5, 0, 0.99, 0.90)]                               # a seed missing: ranks last
    ranked = rank_settings(points + [{"point": {"defsent.lr": 4e-5, "defsent.seed": 1}, "dev": None, "test": {}}],
                           "defsent.seed")
    assert [g["setting"]["defsent.lr"] for g in ranked] == [2e-5, 1e-5, 4e-5]
    best = ranked[0]
    assert best["dev_mean"] == pytest.approx(0.6) and best["dev_sd"] == pytest.approx(0.0)
    mean, sd, n = best["test"]["wordpred-alldefs:mrr@10"]
    assert (mean, n) == (pytest.approx(0.4), 2) and sd == pytest.approx(0.1414213, rel=1e-5)  # sample sd


def test_mean_over_seeds_needs_the_seed_axis_and_task_metric_figures():
    base = {"name": "s", "base": {}, "axes": {"defsent.lr": [1e-5]}, "aggregate": "mean_over_seeds"}
    with pytest.raises(ValueError, match="seed_key"):
        SweepFile.model_validate(base)
    with pytest.raises(ValueError, match="task:metric"):
        SweepFile.model_validate({**base, "axes": {"defsent.lr": [1e-5], "defsent.seed": [0, 1]}, "report_on": ["x"]})
    ok = SweepFile.model_validate({**base, "axes": {"defsent.lr": [1e-5], "defsent.seed": [0, 1]},
                                   "select_on": "wordpred-dev-alldefs:mrr@10"})
    assert ok.aggregate == "mean_over_seeds"


def test_seed_rows_read_the_named_dev_and_test_figures_of_completed_points():
    from defsentflow.sweep_seeds import seed_rows

    figures = {("a0", "wordpred-dev-alldefs", "mrr@10"): 0.5, ("a1", "wordpred-dev-alldefs", "mrr@10"): 0.7,
               ("a0", "wordpred-alldefs", "mrr@10"): 0.4, ("a1", "wordpred-alldefs", "mrr@10"): 0.6}

    class Cat:
        def query(self, sql, params):
            v = figures.get(tuple(params))
            return [{"v": v}] if v is not None else []

    def row(model, lr, seed, status="completed"):
        return {"status": status, "trained_model_id": model, "trained_selection": 99.0,
                "params": {"defsent.lr": lr, "defsent.seed": seed}}

    spec = {"aggregate": "mean_over_seeds", "seed_key": "defsent.seed", "select_on": "wordpred-dev-alldefs:mrr@10",
            "report_on": ["wordpred-alldefs:mrr@10"]}
    ranked = seed_rows(Cat(), [row("a0", 1e-5, 0), row("a1", 1e-5, 1), row("x", 2e-5, 0, "failed")], spec)
    assert len(ranked) == 1 and ranked[0]["dev_mean"] == pytest.approx(0.6)  # the named figure, not trained_selection
    assert ranked[0]["test"]["wordpred-alldefs:mrr@10"][0] == pytest.approx(0.5)


def test_an_sts_figure_reads_the_all_setting_not_the_mean_over_subsets(home):
    """DefSent's STS mean ± sd over seeds (Tables 3 and 8) is of the 'all' figure, whichever row is newer."""
    from defsentflow.storage import Catalog
    from defsentflow.sweep_seeds import catalog_figure

    cat = Catalog()
    cat.record_metrics("m", [{"task": "sts12", "setting": "all", "metric": "spearman", "value": 61.0, "pooling": "cls"},
                             {"task": "sts12", "setting": "mean", "metric": "spearman", "value": 55.0, "pooling": "cls"}])
    assert catalog_figure(cat, "m", "sts12:spearman") == 61.0
    cat.record_metrics("w", [{"task": "wordpred-alldefs", "setting": "mlm_head", "metric": "mrr@10", "value": 0.2,
                              "pooling": "cls"}])
    assert catalog_figure(cat, "w", "wordpred-alldefs:mrr@10") == 0.2   # a setting other than 'all' still found
