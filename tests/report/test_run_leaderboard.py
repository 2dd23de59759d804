"""One leaderboard row per model, under its own (stable) id with its names beside it: ids of one
directory merged, columns of the tasks present, ranked by the dev column the run's selection scorer
named; and the ``leaderboard`` command."""

from __future__ import annotations

import json

import pytest

from defsentflow.cli import main


def _m(task, value, setting="all", metric="spearman", pooling="mean"):
    return {"task": task, "setting": setting, "metric": metric, "value": value, "n": 10, "pooling": pooling}


def _demo_like(cat, *, selection="stsb-dev"):
    """What a demo run leaves: the base encoder under base:<name> (PST step 0 and the baseline's
    evaluation), the dsp-<key> candidates, and pst-<run>, the run's name for the one it chose."""
    column = {"stsb-dev": "stsb_dev_spearman", "revdict-mrr": "revdict_dev_unseen_cosine_mrr"}[selection]
    cat.start_run("pipeline", config={"name": "demo", "pst": {"selection_revdict_mode": "cosine"}}, run_id="demo-1")
    cat.register_model("base:all-MiniLM-L6-v2", "minilm", method="base")
    cat.register_model("dsp-111", "/m/pst/111", method="defsent_plus", pooling="mean")
    cat.register_model("dsp-222", "/m/pst/222", method="defsent_plus", pooling="mean")
    cat.register_model("dsp-111", "/m/pst/111", names=[("pst-demo-1", "run")], run_id="demo-1", keep=True)
    cat.record_metrics("base:all-MiniLM-L6-v2", [_m("stsb-dev", 86.70), _m("revdict-dev", 0.50, "cosine", "mrr")])
    cat.record_metrics("dsp-111", [_m("stsb-dev", 86.80), _m("revdict-dev", 0.55, "cosine", "mrr"),
                                   _m("revdict", 0.90, "head", "mrr")])
    cat.record_metrics("dsp-222", [_m("stsb-dev", 86.90), _m("revdict-dev", 0.52, "cosine", "mrr")])
    for mid, (mrr, top1) in {"dsp-111": (0.60, 0.44), "base:all-MiniLM-L6-v2": (0.48, 0.37)}.items():
        cat.record_metrics(mid, [_m("revdict", mrr, "cosine", "mrr"), _m("revdict", top1, "cosine", "top1"),
                                 _m("sts12", 70.0, "mean"), _m("sts12/MSRpar", 1.0)], run_id="demo-1")
    cat.execute("INSERT INTO pst_runs (run_id, model_id, winner_model_id, winner_step, selection_metric, selection_column) "
                "VALUES ('demo-1', 'pst-demo-1', 'dsp-111', 1, ?, ?)", [selection, column])


def test_one_row_per_model_with_only_the_columns_of_tasks_run(home):
    from defsentflow.report import load_leaderboard
    from defsentflow.storage import Catalog

    cat = Catalog()
    _demo_like(cat)
    board = load_leaderboard(cat)
    ids = [r["model_id"] for r in board.rows]
    assert sorted(ids) == ["base:all-MiniLM-L6-v2", "dsp-111", "dsp-222"]  # the models' own ids, never a run's name
    by = {r["model_id"]: r for r in board.rows}
    assert by["dsp-111"]["aliases"] == ["dsp-111", "pst-demo-1"]
    assert by["base:all-MiniLM-L6-v2"]["aliases"] == ["base:all-MiniLM-L6-v2"]
    assert by["base:all-MiniLM-L6-v2"]["method"] == "base" and by["dsp-111"]["method"] == "defsent_plus"
    # the scores of every id of a model, in one row
    pst, base = by["dsp-111"], by["base:all-MiniLM-L6-v2"]
    assert pst["revdict_test_unseen_cosine_mrr"] == 0.60 and pst["revdict_test_unseen_head_mrr"] == 0.90
    assert base["stsb_dev_spearman"] == 86.70 and base["revdict_test_unseen_cosine_mrr"] == 0.48
    # headline metrics only: no 'mean' setting, no per-subset task, MRR not top1; no STS average without STS
    # named <family>_<split>[_<protocol>][_<mode>]_<metric>; dev figures first
    assert board.columns == ("stsb_dev_spearman", "revdict_dev_unseen_cosine_mrr", "revdict_test_unseen_cosine_mrr",
                             "revdict_test_unseen_head_mrr")
    assert board.splits["stsb_dev_spearman"] == "dev" and board.splits["revdict_test_unseen_cosine_mrr"] == "test"
    # ranked by the run's selection figure on dev: STS-B dev
    assert board.sort_by == "stsb_dev_spearman" and ids == ["dsp-222", "dsp-111", "base:all-MiniLM-L6-v2"]
    assert "demo-1" in board.sort_note
    # restricted to some models: the columns they have
    only = board.restrict(["base:all-MiniLM-L6-v2"])
    assert [r["model_id"] for r in only.rows] == ["base:all-MiniLM-L6-v2"]
    assert "revdict_test_unseen_head_mrr" not in only.columns


def test_ranked_by_the_dev_mrr_when_the_run_selected_by_reverse_dictionary(home):
    from defsentflow.report import load_leaderboard
    from defsentflow.storage import Catalog

    cat = Catalog()
    _demo_like(cat, selection="revdict-mrr")
    board = load_leaderboard(cat)
    # never the test MRR (where dsp-111 leads), the dev one in the run's mode
    assert board.sort_by == "revdict_dev_unseen_cosine_mrr"
    assert [r["model_id"] for r in board.rows] == ["dsp-111", "dsp-222", "base:all-MiniLM-L6-v2"]
    # the papers' protocol on dev is a dev figure too, but not the one this run selected by
    cat.record_metrics("dsp-222", [_m("revdict-dev-papers", 0.99, "cosine", "mrr")])
    board = load_leaderboard(cat)
    assert board.splits["revdict_dev_papers_cosine_mrr"] == "dev" and board.sort_by == "revdict_dev_unseen_cosine_mrr"


def test_a_selection_by_word_prediction_ranks_by_its_dev_column(home):
    from defsentflow.report import load_leaderboard
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.start_run("pipeline", config={"name": "d"}, run_id="d-1")
    cat.record_metrics("x", [_m("wordpred-dev", 0.2, "head", "mrr"), _m("wordpred", 0.9, "head", "mrr")])
    cat.record_metrics("y", [_m("wordpred-dev", 0.3, "head", "mrr"), _m("wordpred", 0.1, "head", "mrr")])
    cat.execute("INSERT INTO pst_runs (run_id, selection_metric) VALUES ('d-1', 'wordpred-dev-mrr')")
    board = load_leaderboard(cat)
    assert board.sort_by == "wordpred_dev_unseen_head_mrr" and [r["model_id"] for r in board.rows] == ["y", "x"]


def test_sts_average_and_a_new_task_get_columns_without_code_changes(home):
    from defsentflow.report import load_leaderboard
    from defsentflow.storage import Catalog

    cat = Catalog()
    seven = {"sts12": 70.0, "sts13": 80.0, "sts14": 75.0, "sts15": 85.0, "sts16": 79.0, "stsb-test": 82.0, "sickr": 77.0}
    cat.record_metrics("a", [_m(t, v) for t, v in seven.items()] + [_m("newtask", 0.3, "dev", "acc"),
                                                                   _m("newtask", 0.6, "dev", "top10"),
                                                                   _m("wordpred", 0.6, "head", "top10")])
    cat.record_metrics("b", [_m("sts12", 60.0), _m("revdict-unseen", 0.2, "cosine", "mrr"),
                             _m("revdict-unseen", 0.1, "cosine", "top1")])
    board = load_leaderboard(cat)
    by = {r["model_id"]: r for r in board.rows}
    assert by["a"]["sts7_test_spearman"] == pytest.approx(sum(seven.values()) / 7, abs=0.005) and by["a"]["sts7_test_n"] == 7
    assert by["b"]["sts7_test_spearman"] is None and by["b"]["sts7_test_n"] == 1   # one of seven: no "Avg."
    # a family the registry does not know: every metric (here a mode named 'dev'); a registered
    # family: its leaderboard figures only (word prediction's MRR@10 and MRR, so no column for a top-10 alone)
    assert by["a"]["newtask_test_dev_acc"] == 0.3 and by["a"]["newtask_test_dev_top10"] == 0.6
    assert not any(c.startswith("wordpred") for c in board.columns)
    assert by["b"]["revdict_test_unseen_cosine_mrr"] == 0.2 and "revdict_test_unseen_cosine_top1" not in board.columns
    assert board.columns[:9] == (*(f"{t}_test_spearman" for t in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb",
                                                                  "sickr", "sts7")), "sts7_test_n")
    # no dev score at all: nothing to rank by, and the board says so
    assert board.sort_by is None and "model id" in board.sort_note


def test_leaderboard_command_prints_one_row_per_model(home, capsys):
    from defsentflow.storage import Catalog

    _demo_like(Catalog())
    assert main(["leaderboard"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # headings: the task and split above, the mode below; what all columns of a task share said once
    assert lines[0].split() == ["stsb", "revdict", "dev", "revdict", "test"], lines[0]
    assert lines[1].split() == ["model_id", "method", "dev", "cosine", "cosine", "head"], lines[1]
    body = lines[3:6]
    assert [ln.split()[0] for ln in body] == ["dsp-222", "dsp-111", "base:all-MiniLM-L6-v2"]
    assert body[1].split()[2:] == ["86.80", "0.5500", "0.6000", "0.9000"]  # one format per metric (not 0.6, 0.9)
    assert "pooling: mean; revdict: unseen mrr" in out and "defsentflow leaderboard --wide" in out
    assert "sorted by stsb_dev_spearman (dev split)" in out and max(len(line) for line in lines) <= 120
    assert main(["leaderboard", "--wide"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["model_id", "pooling", "method", "stsb_dev_spearman"]
    assert lines[0].split()[-1] == "also_known_as" and "dsp-111" in lines[3]
    assert main(["leaderboard", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sort_by"] == "stsb_dev_spearman" and len(data["rows"]) == 3 and "path" not in data["rows"][0]


@pytest.mark.parametrize("before,after,text", [(86.72, 86.82, "+0.10"), (0.5529, 0.4809, "-0.0720"), (None, 1.0, "")])
def test_deltas_in_the_figures_scale(before, after, text):
    from defsentflow.report.leaderboard import format_delta

    assert format_delta(before, after) == text


def test_a_catalog_from_before_stable_ids_shows_the_models_own_id(home):
    """pst-<run> filed as a models row sharing the chosen model's folder (before names): one row,
    under the model's own id, the run-scoped id beside it."""
    from defsentflow.report import load_leaderboard
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.register_model("dsp-111", "/m/pst/111", method="defsent_plus", pooling="mean")
    cat.register_model("pst-old-1", "/m/pst/111", method="pst", pooling="mean", run_id="old-1")
    cat.record_metrics("pst-old-1", [_m("stsb-dev", 86.80)])
    cat.record_metrics("dsp-111", [_m("stsb-dev", 86.80)])
    (row,) = load_leaderboard(cat).rows
    assert row["model_id"] == "dsp-111" and row["aliases"] == ["dsp-111", "pst-old-1"]
    rows = cat.query("SELECT display_id, aliases FROM model_aliases")
    assert rows == [{"display_id": "dsp-111", "aliases": ["dsp-111", "pst-old-1"]}]  # one row per model
