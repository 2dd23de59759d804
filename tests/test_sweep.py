"""Sweeps: expansion, validation, resumable runs and the catalog view / report (no Prefect, no training)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from defsentflow.storage import Catalog
from defsentflow.sweep import load_sweep, run_sweep, set_dotted

BASE = {
    "name": "base",
    "dictionary": {"name": "tiny", "sources": [{"kind": "jsonl", "paths": ["tiny.jsonl"]}]},
    "harvest": None,
    "pst": {"base_model": "minilm", "steps": 1, "seeds": [0], "grid": [{"pooling": "mean", "entry_encoding": "amp"}],
            "lr": 2e-5},
    "eval": {"tasks": ["revdict"], "baselines": ["untrained"]},
}


def sweep(**kw) -> dict:
    return {"name": "s", "base": BASE, **kw}


def test_cartesian_points_extra_points_and_excludes():
    s = load_sweep(data=sweep(
        set={"pst.max_train_entries": 50},
        axes={"pst.lr": [2e-6, 5e-6], "pst.use_pooler": [True, False],
              "pst.grid": [[{"pooling": "mean", "entry_encoding": "amp"}], [{"pooling": "cls", "entry_encoding": "ac"}]]},
        points=[{"pst.normalize_logits": True, "pst.temperature": 0.05},
                {"pst.lr": 2e-6, "pst.use_pooler": True,  # a duplicate of a cartesian point: kept once
                 "pst.grid": [{"pooling": "mean", "entry_encoding": "amp"}]}],
        exclude=[{"pst.lr": 5e-6, "pst.use_pooler": True}]))
    assert len(s.points) == 2 * 2 * 2 - 2 + 1
    assert [p.position for p in s.points] == list(range(1, 8))
    assert len({p.point_id for p in s.points}) == 7
    first = s.points[0]
    assert first.params == {"pst.lr": 2e-6, "pst.use_pooler": True,
                            "pst.grid": [{"pooling": "mean", "entry_encoding": "amp"}]}
    assert first.label == "lr=2e-06, use_pooler=yes, grid=mean-amp"
    assert first.config["name"] == f"s-{first.point_id}" and first.config["pst"]["max_train_entries"] == 50
    assert not any(p.params.get("pst.lr") == 5e-6 and p.params.get("pst.use_pooler") for p in s.points)
    extra = s.points[-1]
    assert extra.config["pst"]["normalize_logits"] is True and extra.config["pst"]["lr"] == 2e-5  # base value kept
    # ids depend on the values only, not on the order the axes are listed in
    again = load_sweep(data=sweep(set={"pst.max_train_entries": 50},
                                  axes={"pst.use_pooler": [False, True], "pst.lr": [5e-6, 2e-6]}))
    ids = {json.dumps(p.params, sort_keys=True): p.point_id for p in again.points}
    assert ids[json.dumps({"pst.lr": 2e-6, "pst.use_pooler": False}, sort_keys=True)] == \
        load_sweep(data=sweep(set={"pst.max_train_entries": 50},
                              axes={"pst.lr": [2e-6], "pst.use_pooler": [False]})).points[0].point_id


@pytest.mark.parametrize("bad, message", [
    ({"axes": {"pst.lrr": [1e-5]}}, "axes.pst.lrr = 1e-05: invalid config: pst.lrr: unknown key; did you mean 'lr'?"),
    ({"axes": {"pst.lr": [1e-5, -1]}}, "axes.pst.lr = -1: invalid config: pst.lr: Input should be greater than 0"),
    ({"axes": {"pst.lr": []}}, "axes: Value error, axis 'pst.lr' has no values"),
    ({"axes": {"pst.lr": [1e-5, 1e-5]}}, "lists a value twice"),
    ({"axes": {"name": ["x"]}}, "the config's name is set by the sweep"),
    ({"axis": {"pst.lr": [1e-5]}}, "axis: unknown key; did you mean 'axes'?"),
    ({"set": {"eval.pooling": "nope"}}, "set: invalid config: eval.pooling"),
    ({"axes": {"pst.grid.3.pooling": ["cls"]}}, "pst.grid is a list of 1; '3' is not a position in it"),
    ({"axes": {"pst.lr": [1e-5]}, "exclude": [{"pst.nothing": 1}]}, "exclude[0] names ['pst.nothing']"),
    ({"axes": {"pst.lr": [1e-5]}, "exclude": [{"pst.lr": 1e-5}]}, "the sweep has no points"),
    ({"axes": {"pst.lr_per_step": [[1e-5]]}, "points": [], "set": {"pst.lr": 3e-5}},
     "lr (3e-05) and lr_per_step[0] (1e-05) disagree"),
])
def test_invalid_sweeps_name_the_key(bad, message):
    with pytest.raises(ValueError) as err:
        load_sweep(data=sweep(**bad))
    assert message in str(err.value), str(err.value)


def test_sweep_file_base_path_and_errors_name_the_file(tmp_path):
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    good = tmp_path / "sweeps" / "ok.yaml"
    good.parent.mkdir()
    good.write_text(yaml.safe_dump({"name": "ok", "base": "../base.yaml", "axes": {"pst.lr": [1e-5, 2e-6]}}))
    s = load_sweep(good)
    assert s.base_path == str((tmp_path / "base.yaml").resolve()) and len(s.points) == 2
    bad = tmp_path / "sweeps" / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "bad", "base": "../base.yaml", "axes": {"pst.tempreature": [0.05]}}))
    with pytest.raises(ValueError, match=r"bad\.yaml: axes\.pst\.tempreature"):
        load_sweep(bad)
    missing = tmp_path / "sweeps" / "missing.yaml"
    missing.write_text(yaml.safe_dump({"name": "m", "base": "nowhere.yaml"}))
    with pytest.raises(FileNotFoundError, match="nowhere.yaml"):
        load_sweep(missing)


def test_set_dotted_copies_and_reaches_into_lists():
    cfg = {"pst": {"grid": [{"pooling": "mean"}]}, "harvest": None}
    out = set_dotted(cfg, "pst.grid.0.pooling", "cls")
    assert out["pst"]["grid"][0]["pooling"] == "cls" and cfg["pst"]["grid"][0]["pooling"] == "mean"
    assert set_dotted(cfg, "harvest.x", 1)["harvest"] == {"x": 1}
    with pytest.raises(ValueError, match="is a value"):
        set_dotted({"a": 1}, "a.b", 2)


def test_run_sweep_records_skips_resumes_and_survives_a_failing_point(home):
    s = load_sweep(data=sweep(axes={"pst.lr": [1e-5, 5e-6, 2e-6]}))
    calls: list[str] = []

    def run_point(point, config_path, run_id):
        calls.append(point.point_id)
        assert yaml.safe_load(open(config_path))["pst"]["lr"] == point.params["pst.lr"]
        assert run_id.startswith(point.name)
        if point.params["pst.lr"] == 5e-6 and calls.count(point.point_id) == 1:
            raise RuntimeError("out of memory")
        return {"status": "completed", "run_id": run_id}

    out = run_sweep(s, run_point)
    ids = [p.point_id for p in s.points]
    assert out.ran == [ids[0], ids[2]] and list(out.failed) == [ids[1]] and "out of memory" in out.failed[ids[1]]
    rows = {r["point_id"]: r for r in Catalog().query("SELECT * FROM sweep_points WHERE sweep = 's'")}
    assert [rows[i]["status"] for i in ids] == ["completed", "failed", "completed"]
    assert json.loads(rows[ids[0]]["params"]) == {"pst.lr": 1e-5} and rows[ids[0]]["seconds"] >= 0

    again = run_sweep(s, run_point)  # only the failed point runs again
    assert again.skipped == [ids[0], ids[2]] and again.ran == [ids[1]] and calls[-1] == ids[1]

    # A point killed mid-run (its row says 'running', its process is gone) is marked and rerun.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()})
    Catalog().execute("UPDATE sweep_points SET status = 'running', owner = ? WHERE point_id = ?", [owner, ids[2]])
    n = len(calls)
    resumed = run_sweep(s, run_point)
    assert resumed.ran == [ids[2]] and calls[n:] == [ids[2]]

    # A changed config (here through `set`) reruns every point; --force reruns completed ones.
    changed = load_sweep(data=sweep(set={"pst.max_train_entries": 10}, axes={"pst.lr": [1e-5, 5e-6, 2e-6]}))
    assert [p.point_id for p in changed.points] == ids
    assert run_sweep(changed, run_point).ran == ids
    assert run_sweep(changed, run_point, only=["2"], force=True).ran == [ids[1]]

    # Points the sweep file no longer lists leave the table.
    fewer = load_sweep(data=sweep(set={"pst.max_train_entries": 10}, axes={"pst.lr": [1e-5, 2e-6]}))
    assert run_sweep(fewer, run_point).skipped == [ids[0], ids[2]]
    assert [r["point_id"] for r in Catalog().query("SELECT point_id FROM sweep_points ORDER BY position")] == \
        [ids[0], ids[2]]


def test_interrupt_marks_the_point_and_stops(home):
    s = load_sweep(data=sweep(axes={"pst.lr": [1e-5, 5e-6]}))

    def run_point(point, config_path, run_id):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(s, run_point)
    status = [r["status"] for r in Catalog().query("SELECT status FROM sweep_points ORDER BY position")]
    assert status == ["interrupted", "pending"]


def _fake_run(cat: Catalog, run_id: str, trained_id: str, step0: float, step1: float, stsb: float,
              head: float, cosine: float) -> None:
    """Catalog rows a finished pipeline run of a point leaves: run, PST steps, the trained model's metrics."""
    cat.execute("INSERT INTO runs (run_id, flow, config, status) VALUES (?, 'pipeline', ?, 'completed')",
                [run_id, json.dumps({"pst": {"base_model": "minilm"}, "eval": {"pooling": "mean"}})])
    for step, model, score in ((0, "base-x", step0), (1, trained_id, step1)):
        cat.execute("INSERT INTO pst_steps (run_id, step, model_id, selection_metric, selection_score, chosen, pooling) "
                    "VALUES (?, ?, ?, 'stsb-dev', ?, true, 'mean')", [run_id, step, model, score])
    cat.execute("INSERT INTO pst_runs (run_id, winner_step) VALUES (?, ?)", [run_id, 1 if step1 > step0 else 0])
    cat.record_metrics(trained_id, [
        {"task": "stsb-dev", "setting": "all", "metric": "spearman", "value": stsb, "n": 1500, "pooling": "mean"},
        {"task": "revdict", "setting": "head", "metric": "mrr", "value": head, "n": 2000, "pooling": "mean"},
        {"task": "revdict", "setting": "cosine", "metric": "mrr", "value": cosine, "n": 2000, "pooling": "mean"},
        {"task": "revdict", "setting": "hybrid", "metric": "mrr", "value": cosine + 0.07, "n": 2000, "pooling": "mean"},
    ], run_id=run_id)


def test_sweep_results_view_and_report(home):
    from defsentflow.report.sweep_report import sweep_table, write_sweep_report

    s = load_sweep(data=sweep(axes={"pst.lr": [1e-5, 2e-6]}))
    cat = Catalog()
    runs = {}

    def run_point(point, config_path, run_id):
        runs[point.point_id] = run_id
        return {"status": "completed"}

    run_sweep(s, run_point)
    a, b = (p.point_id for p in s.points)
    _fake_run(cat, runs[a], "m-a", 86.72, 85.0, 85.0, 0.20, 0.24)
    _fake_run(cat, runs[b], "m-b", 86.72, 87.1, 87.1, 0.31, 0.26)
    cat.record_metrics("base:all-MiniLM-L6-v2", [
        {"task": "stsb-dev", "setting": "all", "metric": "spearman", "value": 86.72, "n": 1500, "pooling": "mean"},
        {"task": "revdict", "setting": "cosine", "metric": "mrr", "value": 0.236, "n": 2000, "pooling": "mean"}])

    rows = cat.query("SELECT * FROM sweep_results WHERE sweep = 's' ORDER BY position")
    assert [(r["point_id"], r["winner_step"], r["trained_model_id"], r["stsb_dev"], r["revdict_head_mrr"])
            for r in rows] == [(a, 0, "m-a", 85.0, 0.20), (b, 1, "m-b", 87.1, 0.31)]
    assert rows[0]["untrained_selection"] == 86.72 and rows[1]["trained_selection"] == 87.1
    assert rows[1]["revdict_hybrid_mrr"] == pytest.approx(0.33)

    table = sweep_table("s")
    cols = table.columns
    assert table.rows[0][1] == "untrained" and table.rows[0][cols.index("STS-B dev")] == 86.72
    assert table.rows[0][cols.index("revdict test MRR cosine")] == 0.236
    # ranked by the dev selection figure (b: 87.1 before a: 85.0), whatever the test columns say
    assert [r[1] for r in table.rows[1:]] == [b, a]
    assert table.rows[1][cols.index("Δ STS-B dev")] == pytest.approx(87.1 - 86.72)
    # changing only test-split figures (now a beats b on every test column) changes no ranking
    cat.record_metrics("m-a", [{"task": t, "setting": m, "metric": "mrr", "value": 0.99, "n": 2000, "pooling": "mean"}
                               for t in ("revdict",) for m in ("head", "cosine", "hybrid")])
    assert [r[1] for r in sweep_table("s").rows[1:]] == [b, a]
    out = write_sweep_report("s")
    text = out.markdown_path.read_text()
    assert "| 2 | " + b + " | lr=2e-06 | completed | 1 | 1 | 87.10 | 87.10 | +0.38 |  | 0.310 | 0.260 | 0.330 |" in text
    assert out.chart_path is not None and out.chart_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(KeyError, match="no sweep 'other'"):
        sweep_table("other")


def test_cli_show_lists_points_and_rejects_a_bad_file(tmp_path):
    from tests.integration.tiny_pipeline_utils import cli_here  # in this process: the subject is what it prints

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "cli", "base": "base.yaml", "axes": {"pst.lr": [1e-5, 2e-6]}}))
    out = cli_here(["sweep", "show", str(f)], tmp_path / "home")
    assert out.returncode == 0, out.stderr
    assert "sweep cli: 2 points" in out.stdout and "lr=2e-06" in out.stdout and "not run" in out.stdout
    f.write_text(yaml.safe_dump({"name": "cli", "base": "base.yaml", "axes": {"pst.lr": [0]}}))
    bad = cli_here(["sweep", "show", str(f)], tmp_path / "home")
    assert bad.returncode == 2 and "axes.pst.lr = 0" in bad.stderr and "s.yaml" in bad.stderr


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[1] / "configs" / "sweeps").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_shipped_sweeps_validate(path):
    s = load_sweep(path)
    assert len(s.points) >= 2 and len({p.point_id for p in s.points}) == len(s.points)


def test_defsent_lr_sweep_is_ranked_by_dev_word_prediction(home):
    """configs/sweeps/defsent-lr.yaml: DefSent points (no PST) ranked by wordpred-dev MRR, never by test."""
    from defsentflow.report.sweep_report import sweep_table

    s = load_sweep(Path(__file__).resolve().parents[1] / "configs" / "sweeps" / "defsent-lr.yaml")
    assert len(s.points) == 15 and s.points[0].params == {"defsent.lr": 1.0e-6}
    assert [p.params["defsent.lr"] for p in s.points][-1] == pytest.approx(2 ** 7 * 1e-6, rel=1e-3)
    cat = Catalog()
    runs = {}

    def run_point(point, config_path, run_id):
        runs[point.point_id] = run_id
        return {"status": "completed"}

    run_sweep(s, run_point, only=["1", "2"])
    a, b = s.points[0].point_id, s.points[1].point_id
    for pid, model, dev, test in ((a, "defsent-a", 0.40, 0.10), (b, "defsent-b", 0.20, 0.90)):
        run_id = runs[pid]
        cat.execute("INSERT INTO runs (run_id, flow, config, status) VALUES (?, 'pipeline', ?, 'completed')",
                    [run_id, json.dumps({"defsent": {"base_model": "raw"}, "eval": {"pooling": "mean"}})])
        cat.register_model(model, f"/models/{model}", method="defsent", artifact_key=f"key-{model}")
        cat.record_stage(run_id, "train-defsent", "completed", cache_key=f"key-{model}")
        cat.record_metrics(model, [
            {"task": "wordpred-dev", "setting": "mlm_head", "metric": "mrr", "value": dev, "n": 100, "pooling": "mean"},
            {"task": "wordpred", "setting": "mlm_head", "metric": "mrr", "value": test, "n": 100, "pooling": "mean"}])
    rows = {r["point_id"]: r for r in cat.query("SELECT * FROM sweep_results WHERE sweep = 'defsent-lr'")}
    assert rows[a]["trained_model_id"] == "defsent-a" and rows[a]["selection_metric"] == "wordpred-dev-mrr"
    assert rows[a]["trained_selection"] == pytest.approx(0.40)
    table = sweep_table("defsent-lr")
    ranked = [r[1] for r in table.rows if r[1] in (a, b)]
    assert ranked == [a, b]  # a has the better dev MRR; b's far better test MRR is not read
