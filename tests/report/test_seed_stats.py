"""Table 2's statistic: the chosen combination's seeds, mean ± sd beside the selected seed (synthetic rows)."""

from __future__ import annotations

import json
import statistics

import pytest

from defsentflow.report.seed_stats import seed_stats_rows
from defsentflow.storage import Catalog


def _file(cat, rows, run_id="r"):
    """Metric rows ``(model, row)`` as the evaluate flow files them, in one transaction (many models)."""
    with cat.transaction() as con:
        con.executemany("INSERT INTO metrics (model_id, task, setting, metric, value, n, pooling, run_id) "
                        "VALUES (?, ?, ?, ?, ?, 10, ?, ?)",
                        [[m, r["task"], r["setting"], r["metric"], r["value"], r["pooling"], run_id] for m, r in rows])


def _pst_run(cat, run="r"):
    """A 3-step PST run with an ICA candidate at step 3, three seeds, as pst_steps records it; the
    chosen combination is (cls, ac); (mean, amp) is another step-1 combination."""
    models = []
    with cat.transaction() as con:
        con.execute("INSERT INTO pst_runs (run_id, winner_step, winner_model_id, model_id, reason) "
                    "VALUES (?, 3, 'm3i-1', ?, 'the last step')", [run, f"pst-{run}"])
        for step, ica in ((1, False), (2, False), (3, False), (3, True)):
            for seed in (0, 1, 2):
                model = f"m{step}{'i' if ica else ''}-{seed}"
                con.execute("INSERT INTO pst_steps (run_id, step, seed, model_id, pooling, entry_encoding, chosen, ica) "
                            "VALUES (?, ?, ?, ?, 'cls', 'ac', ?, ?)", [run, step, seed, model, seed == 1, ica])
                models.append((step, ica, seed, model))
        con.execute("INSERT INTO pst_steps (run_id, step, seed, model_id, pooling, entry_encoding, chosen) "
                    "VALUES (?, 1, 0, 'other', 'mean', 'amp', false)", [run])
    return models


def test_mean_and_sd_per_step_and_pooling_over_the_chosen_combinations_seeds(home):
    cat = Catalog()
    models = _pst_run(cat)

    def value(step, ica, seed, task, pooling):
        return 60.0 + 3 * step + 5 * ica + seed + (1.5 if pooling == "prompt" else 0.0) + len(task) / 10

    _file(cat, [(model, {"task": t, "setting": "all", "metric": "spearman", "pooling": pooling,
                         "value": 1.0 if "/" in t else value(step, ica, seed, t, pooling) + 50 * (model == "other")})
                for step, ica, seed, model in models + [(1, False, 0, "other")] for pooling in ("cls", "prompt")
                for t in ("sts12", "stsb-test", "stsb-dev", "sts12/MSRpar")])
    # the prompt pooling has all seven tasks of Table 2's average, cls only two of them
    rest = ("sts13", "sts14", "sts15", "sts16", "sickr")
    _file(cat, [(model, {"task": t, "setting": "all", "metric": "spearman", "pooling": "prompt",
                         "value": value(step, ica, seed, t, "prompt")})
                for step, ica, seed, model in models for t in rest])
    rows = seed_stats_rows(lambda sql, **p: cat.query(sql, {"run_id": "r", **p}))
    got = {(r["step_label"], r["pooling"], r["task"]): r for r in rows if r["metric"] == "spearman"}
    count = {(r["step_label"], r["pooling"]): r["mean"] for r in rows if r["task"] == "sts7" and r["metric"] == "n"}
    # 4 steps x (cls: 3 tasks, prompt: 8) + the average and its count; subsets and the other combination stay out
    assert len(rows) == 4 * (3 + 8 + 2 * 2) and {k[0] for k in got} == {"1st", "2nd", "3rd", "3rd-ICA"}
    assert set(count.values()) == {2.0, 7.0} and count[("1st", "cls")] == 2.0
    for step, ica, label in ((1, False, "1st"), (3, True, "3rd-ICA")):
        for pooling in ("cls", "prompt"):
            seeds = [value(step, ica, s, "sts12", pooling) for s in (0, 1, 2)]
            r = got[(label, pooling, "sts12")]
            assert r["n"] == 3 and r["seeds"] == [0, 1, 2]
            assert r["mean"] == pytest.approx(statistics.mean(seeds)) and r["sd"] == pytest.approx(statistics.stdev(seeds))
            if pooling == "cls":   # two of seven: Table 2's Avg. stays empty
                assert got[(label, pooling, "sts7")]["mean"] is None
                continue
            avg = [statistics.mean(value(step, ica, s, t, pooling) for t in ("sts12", "stsb-test", *rest))
                   for s in (0, 1, 2)]
            assert got[(label, pooling, "sts7")]["mean"] == pytest.approx(statistics.mean(avg))
    # the leaderboard: one row per step and pooling, its figures means with their sd beside
    from defsentflow.report import load_leaderboard

    board = load_leaderboard(cat)
    seed_rows = {(r["model_id"], r["pooling"]): r for r in board.rows if "seeds)" in r["model_id"]}
    row = seed_rows[("pst-r 3rd-ICA (mean of 3 seeds)", "prompt")]
    assert row["sts12_test_spearman"] == pytest.approx(got[("3rd-ICA", "prompt", "sts12")]["mean"], abs=0.005)
    assert row["sts12_test_spearman_sd"] == pytest.approx(got[("3rd-ICA", "prompt", "sts12")]["sd"], abs=0.005)
    assert len(seed_rows) == 8
    cols, cells = board.table()
    line = next(c for c in cells if c[0] == "pst-r 1st (mean of 3 seeds)" and c[1] == "cls")
    assert " ± 1.00" in line[cols.index("sts12_test_spearman")]


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


def test_a_paper_config_s_report_holds_mean_and_sd_per_step_and_pooling_prompt_included(home, tmp_path):
    """configs/bert-base-defsent-plus.yaml: its plan evaluates every seed of the chosen combination at
    every step with the training pooling and Table 7's Prompt; the report prints both tables."""
    from pathlib import Path
    from types import SimpleNamespace

    from defsentflow.config import load_config
    from defsentflow.pipeline import chosen_combination_seeds, evaluation_plan
    from defsentflow.report import build_report

    config = load_config(Path(__file__).resolve().parents[2] / "configs" / "bert-base-defsent-plus.yaml").model_dump(
        mode="json")
    data = tmp_path / "data" / "sts" / "STSBenchmark"
    data.mkdir(parents=True)
    for split in ("dev", "test"):
        (data / f"sts-{split}.csv").write_text("genre\tf\t2012\t0\t5.0\ta b\ta b\n")
    config["eval"].update(tasks=["stsb-dev", "stsb-test"], data_dir=str(tmp_path / "data"), baselines=[])
    cat = Catalog()
    cat.start_run("pipeline", config=config, run_id="r")
    models = _pst_run(cat)
    dirs = {}
    for _, _, _, model in models:
        dirs[model] = tmp_path / model
        dirs[model].mkdir()
        (dirs[model] / "defsentflow.json").write_text(json.dumps({"pooling": "cls"}))

    def cand(step, ica, seed, model):
        return SimpleNamespace(step=step, ica=ica, seed=seed, model_id=model, model_dir=str(dirs[model]),
                               pooling="cls", entry_encoding="ac")

    steps = []
    for step in (1, 2, 3):
        cands = [cand(*m) for m in models if m[0] == step]
        if step == 1:
            cands.append(SimpleNamespace(step=1, ica=False, seed=0, model_id="other", model_dir="x", pooling="mean",
                                         entry_encoding="amp"))
        steps.append(SimpleNamespace(step=step, candidates=cands, best=cands[1]))
    seeds = chosen_combination_seeds(SimpleNamespace(steps=steps))
    assert len(seeds) == 12 and {(s["step"], s["ica"]) for s in seeds} == {(1, False), (2, False), (3, False), (3, True)}
    plan = evaluation_plan(config, {"model_dir": str(dirs["m3i-1"]), "model_id": "pst-r"}, None, "bert-base-uncased",
                           seeds=seeds)
    per_seed = {(p["model_id"], p["pooling"]) for p in plan if p["model_id"].startswith("m")}
    assert per_seed == {(s["model_id"], pooling) for s in seeds for pooling in ("cls", "prompt")}
    rows = []
    for p in plan:   # what the evaluate flow files for each entry
        step = next(m for m in models if m[3] == p["model_id"]) if p["model_id"].startswith("m") else (3, True, 1, "")
        rows += [(p["model_id"], {"task": t, "setting": "all", "metric": "spearman", "pooling": p["pooling"],
                                  "value": 70.0 + step[0] + 2 * step[1] + step[2] + (p["pooling"] == "prompt")})
                 for t in p["tasks"]]
    _file(cat, rows)
    md = build_report("r").markdown
    section = md[md.index("## Mean over seeds per step and pooling"):]
    for pooling in ("cls", "prompt"):
        table = section[section.index(f"### Pooling: {pooling}"):]
        table = table[:table.index("\n\n", table.index("| step"))]
        for label in ("1st", "2nd", "3rd", "3rd-ICA"):
            assert f"| {label} | 3 |" in table, (pooling, label)
        assert table.count(" ± 1.00") >= 4 * 2   # stsb-dev and stsb-test per step
        assert "Avg. (1 of 7 tasks)" in table     # the average of one task is not Table 2's Avg.: empty


def test_defsents_untrained_rows_with_cls_mean_and_max_on_every_task(tmp_path):
    """DefSent's Table 2: the pretrained model with CLS, Mean and Max beside DefSent's rows, word
    prediction included (eval.baseline_poolings), filed as '<base id>+<pooling>'."""
    from pathlib import Path

    from defsentflow.config import load_config
    from defsentflow.evaluation.config import EvaluateSection
    from defsentflow.pipeline import evaluation_plan

    config = load_config(Path(__file__).resolve().parents[2] / "configs" / "bert-base-defsent.yaml").model_dump(mode="json")
    assert config["eval"]["baseline_poolings"] == ["cls", "mean", "max"]
    sts = tmp_path / "data"
    (sts / "sts" / "STSBenchmark").mkdir(parents=True)
    (sts / "sts" / "STSBenchmark" / "sts-dev.csv").write_text("genre\tf\t2012\t0\t5.0\ta b\ta b\n")
    config["eval"].update(tasks=["stsb-dev", "wordpred"], data_dir=str(sts), also_poolings=["mean"])
    model = tmp_path / "m"
    model.mkdir()
    (model / "defsentflow.json").write_text(json.dumps({"pooling": "cls"}))
    plan = evaluation_plan(config, {"model_dir": str(model), "model_id": "defsent-r"}, None, "bert-base-uncased")
    by_id = {p["model_id"]: (p["pooling"], tuple(p["tasks"])) for p in plan}
    assert by_id["defsent-r"] == ("cls", ("stsb-dev", "wordpred"))          # the trained pooling (eval.pooling: null)
    assert by_id["base:bert-base-uncased"] == ("cls", ("stsb-dev", "wordpred"))
    assert by_id["base:bert-base-uncased+mean"] == ("mean", ("stsb-dev", "wordpred"))
    assert by_id["base:bert-base-uncased+max"] == ("max", ("stsb-dev", "wordpred"))
    assert [p["model_id"] for p in plan].count("base:bert-base-uncased+mean") == 1  # not again for also_poolings
    for p in plan:
        EvaluateSection.model_validate(p)


def test_a_seed_missing_a_task_leaves_the_average_empty_and_its_cells_say_which_seeds(home):
    """Issue 57: seed 2 lacks SICK-R at the 1st step, so no Avg. of three seeds exists there (it showed the
    other two seeds' mean under n = 3); a task two of three seeds have says which two."""
    from defsentflow.report.run_report import markdown_table
    from defsentflow.report.seed_stats import seed_stats_section

    cat = Catalog()
    models = _pst_run(cat)
    seven = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb-test", "sickr")
    _file(cat, [(model, {"task": t, "setting": "all", "metric": "spearman", "pooling": "cls",
                         "value": 70.0 + seed + 0.1 * k})
                for step, ica, seed, model in models for k, t in enumerate(seven + ("stsb-dev",))
                if not (step == 1 and seed == 2 and t in ("sickr", "stsb-dev"))])
    query = lambda sql, **p: cat.query(sql, {"run_id": "r", **p})  # noqa: E731
    got = {(r["step_label"], r["task"], r["metric"]): r for r in seed_stats_rows(query)}
    assert got[("1st", "sts7", "spearman")]["mean"] is None and got[("1st", "sts7", "n")]["mean"] == 6.0
    assert got[("2nd", "sts7", "spearman")]["mean"] == pytest.approx(71.3) and got[("2nd", "sts7", "n")]["mean"] == 7.0
    table = "\n".join(seed_stats_section(query, markdown_table))
    assert "Avg. (6 of 7 tasks)" in table
    first = next(line for line in table.splitlines() if line.startswith("| 1st"))
    assert "(seeds 0, 1)" in first and first.count("(seeds 0, 1)") == 2   # sickr and stsb-dev
    second = next(line for line in table.splitlines() if line.startswith("| 2nd"))
    assert "71.30 ± 1.00" in second and "(seeds" not in second
