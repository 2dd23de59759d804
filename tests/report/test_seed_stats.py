"""Table 2's statistic: the chosen combination's seeds, mean ± sd beside the selected seed (synthetic rows)."""

from __future__ import annotations

import json
import statistics

import pytest

from defsentflow.report.seed_stats import seed_stats_rows
from defsentflow.storage import Catalog


def test_mean_and_sd_over_the_chosen_combinations_seeds(home):
    cat = Catalog()
    cat.execute("INSERT INTO pst_runs (run_id, winner_step, winner_model_id, model_id) VALUES ('r', 1, 'm1', 'pst-r')")
    for seed, model, pooling in [(0, "m0", "cls"), (1, "m1", "cls"), (2, "m2", "cls"), (0, "other", "mean")]:
        cat.execute("INSERT INTO pst_steps (run_id, step, seed, model_id, pooling, entry_encoding, chosen) "
                    "VALUES ('r', 1, ?, ?, ?, 'ac', ?)", [seed, model, pooling, model == "m1"])
    sts = {"m0": 70.0, "m1": 72.0, "m2": 71.0, "other": 99.0}
    for model, value in sts.items():
        cat.record_metrics(model, [{"task": "sts12", "setting": "all", "metric": "spearman", "value": value,
                                    "pooling": "cls"},
                                   {"task": "sts12/MSRpar", "setting": "all", "metric": "spearman", "value": 1.0,
                                    "pooling": "cls"}], run_id="r")
    rows = seed_stats_rows(lambda sql, **p: cat.query(sql, {"run_id": "r", **p}))
    assert len(rows) == 1  # per-subset rows and the other combination stay out
    r = rows[0]
    assert (r["task"], r["n"], r["best_seed"], r["best"]) == ("sts12", 3, 1, 72.0)
    assert r["mean"] == pytest.approx(71.0) and r["sd"] == pytest.approx(statistics.stdev([70.0, 72.0, 71.0]))


def test_the_plan_evaluates_each_seed_with_the_selected_pooling(tmp_path):
    from pathlib import Path

    from defsentflow.config import load_config
    from defsentflow.pipeline import evaluation_plan

    config = load_config(Path(__file__).resolve().parents[2] / "configs" / "bert-base-defsent-plus.yaml").model_dump(
        mode="json")
    assert config["eval"]["pooling"] is None and config["eval"]["seed_stats"]
    config["eval"]["tasks"] = ["revdict"]  # kept without data files (STS tasks need ../shared/data)
    dirs = []
    for i in range(3):
        d = tmp_path / f"m{i}"
        d.mkdir()
        (d / "defsentflow.json").write_text(json.dumps({"pooling": "cls"}))
        dirs.append(d)
    seeds = [{"model_dir": str(d), "model_id": f"m{i}", "seed": i} for i, d in enumerate(dirs)]
    plan = evaluation_plan(config, {"model_dir": str(dirs[1]), "model_id": "pst-r"}, None, "bert-base-uncased",
                           seeds=seeds)
    by_id = {p["model_id"]: p["pooling"] for p in plan}
    assert by_id["pst-r"] == by_id["m0"] == by_id["m2"] == by_id["base:bert-base-uncased"] == "cls"
    assert by_id["base:bert-base-uncased+sbert_wk"] == "sbert_wk"
    from defsentflow.evaluation.config import EvaluateSection

    for p in plan:  # each entry is what the evaluate flow validates
        EvaluateSection.model_validate(p)


def test_also_poolings_add_prompt_rows_for_the_selected_encoder_and_the_baseline_on_sts_only(tmp_path):
    from pathlib import Path

    from defsentflow.config import load_config
    from defsentflow.evaluation.config import EvaluateSection
    from defsentflow.pipeline import evaluation_plan

    config = load_config(Path(__file__).resolve().parents[2] / "configs" / "bert-base-defsent-plus.yaml").model_dump(
        mode="json")
    assert config["eval"]["also_poolings"] == ["prompt"]  # every DefSent+ paper config (Table 7)
    sts = tmp_path / "data"
    (sts / "sts" / "STSBenchmark").mkdir(parents=True)
    (sts / "sts" / "STSBenchmark" / "sts-dev.csv").write_text("genre\tf\t2012\t0\t5.0\ta b\ta b\n")
    config["eval"].update(tasks=["stsb-dev", "revdict"], data_dir=str(sts), seed_stats=False, baselines=["untrained"])
    model = tmp_path / "m"
    model.mkdir()
    (model / "defsentflow.json").write_text(json.dumps({"pooling": "cls"}))
    plan = evaluation_plan(config, {"model_dir": str(model), "model_id": "pst-r"}, None, "bert-base-uncased")
    by_id = {p["model_id"]: (p["pooling"], tuple(p["tasks"])) for p in plan}
    assert by_id["pst-r"] == ("cls", ("stsb-dev", "revdict"))
    assert by_id["pst-r+prompt"] == ("prompt", ("stsb-dev",))  # the dictionary tasks keep the training pooling
    assert by_id["base:bert-base-uncased+prompt"] == ("prompt", ("stsb-dev",))
    for p in plan:
        EvaluateSection.model_validate(p)

    config["eval"]["also_poolings"] = ["cls"]  # the pooling already evaluated adds nothing
    assert len(evaluation_plan(config, {"model_dir": str(model), "model_id": "pst-r"}, None, "bert-base-uncased")) == 2
