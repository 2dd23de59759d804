"""The run report from a fabricated catalog: every section, images on disk, HTML a browser opens."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from defsentflow.cli import main
from defsentflow.model.entry_matrix import EntryMatrix

RUN = "run-fixture"


def _fabricate(root: Path) -> None:
    from defsentflow.report import analyse_entry_matrix
    from defsentflow.storage import Catalog, hash_path

    cat = Catalog()
    cat.start_run("pipeline", config={"base_model": "minilm", "pst": {"steps": 2}}, config_hash="c0ffee", run_id=RUN)
    cat.record_stage(RUN, "ingest-dictionary", "completed", cache_key="k-ingest", seconds=1.5)
    cat.record_stage(RUN, "harvest-pairs", "cached", cache_key="k-harvest", note="cache hit")
    cat.end_run(RUN, "completed", note=json.dumps({"run_id": RUN, "status": "completed"}), flow="pipeline")
    cat.start_run("pipeline", run_id="other-run")
    # harvested pairs: one set with its Parquet, one known only by its histogram
    pairs = root / "pairs" / "pairs.parquet"
    pairs.parent.mkdir(parents=True)
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"score": pa.array(np.r_[rng.uniform(0.5, 1, 300), rng.uniform(0, 0.6, 300)], pa.float32()),
                             "kind": ["neighbour"] * 300 + ["random"] * 300}), pairs)
    cat.register_artifact("pairs-key-1", "pairs", pairs, hash_path(pairs), name="bbc-pairs", run_id=RUN,
                          input_hashes={"corpus": "abcdef0123456789", "scorer": "0123456789abcdef"})
    ins = ("INSERT INTO harvest_stats (artifact_key, run_id, corpus, n_pairs, n_neighbour, n_random, mean, std, "
           "quantiles, histogram) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    cat.execute(ins, ["pairs-key-1", RUN, "bbc", 600, 300, 300, 0.55, 0.25, json.dumps({"q05": 0.1, "q50": 0.55, "q95": 0.95}),
                      None])
    cat.execute(ins, ["pairs-key-2", RUN, "austen", 10, 5, 5, 0.5, 0.2, None,
                      json.dumps({"edges": [0.0, 0.25, 0.5, 0.75, 1.0], "counts": [1, 3, 4, 2]})])
    # models: this run's PST winner, a model of another run, and baselines (no run)
    (root / "models" / "pst").mkdir(parents=True)  # the winner's folder, with the losses its training saved
    (root / "models" / "pst" / "defsentflow.json").write_text(json.dumps({"losses": [2.0, 1.6, 1.3, 1.2, 1.15]}))
    cat.register_model(f"pst-{RUN}", root / "models" / "pst", method="pst", base_model="minilm", pooling="cls", run_id=RUN)
    cat.register_model("foreign", root / "models" / "foreign", method="defsent", run_id="other-run")
    m = lambda t, v, s="all", metric="spearman": {"task": t, "setting": s, "metric": metric, "value": v, "n": 10}  # noqa: E731
    cat.record_metrics("minilm", [dict(m(t, v), pooling="mean") for t, v in
                                  [("sts12", 72.37), ("sts13", 80.6), ("sts14", 75.59), ("sts15", 85.39), ("sts16", 78.99),
                                   ("stsb-dev", 86.7)]])
    cat.record_metrics("minilm", [dict(m(t, v), pooling="sbert_wk") for t, v in [("sts12", 60.1), ("stsb-dev", 70.2)]])
    cat.record_metrics(f"pst-{RUN}", [dict(m(t, v), pooling="cls") for t, v in [("sts12", 65.0), ("stsb-dev", 80.0)]]
                       + [dict(m("revdict", 0.4, "head", "mrr"), pooling="cls")], run_id=RUN)
    cat.record_metrics("foreign", [dict(m("sts12", 1.0), pooling="mean")])
    # a candidate trained by another PST run (its models row carries no run id) is no baseline
    cat.register_model("dsp-old", root / "models" / "old", method="defsent_plus", pooling="mean")
    cat.record_metrics("dsp-old", [dict(m("sts12", 2.0), pooling="mean")])
    cat.record_metrics("minilm-bare", [dict(m("sts12", 70.0), pooling="mean")])
    # PST: step 0 (untrained), steps 1 and 2 with entry matrices; step 1 analysed during training
    mats = {}
    for step, scale in ((1, 5.0), (2, 1.5)):
        x = rng.normal(size=(400, 16)) * np.r_[scale, np.ones(15)] + (2.0 if step == 1 else 0.3)
        mats[step] = root / "pst" / f"m{step}"
        EntryMatrix([f"e{i}" for i in range(len(x))], x.astype(np.float32)).save(mats[step])
    ins = ("INSERT INTO pst_steps (run_id, step, seed, model_id, selection_metric, selection_score, chosen, "
           "entry_matrix_path, pooling, lr) VALUES (?, ?, ?, ?, 'stsb-dev', ?, ?, ?, 'cls', 1e-5)")
    cat.execute(ins, [RUN, 0, None, "minilm", 75.0, True, None])
    cat.execute(ins, [RUN, 1, 0, "s1-seed0", 77.0, False, str(mats[1])])
    cat.execute(ins, [RUN, 1, 1, f"pst-{RUN}", 80.0, True, str(mats[1])])
    cat.execute(ins, [RUN, 2, 0, "s2-seed0", 79.0, True, str(mats[2])])
    analyse_entry_matrix(mats[1], run_id=RUN, step=1, catalog=cat)
    cat.execute("INSERT INTO pst_runs (run_id, base_model, winner_step, winner_model_id, model_id, selection_metric, "
                "selection_score, reason) VALUES (?, 'minilm', 1, ?, ?, 'stsb-dev', 80.0, 'step 1 wins')",
                [RUN, f"pst-{RUN}", f"pst-{RUN}"])


def _table(md: str, section: str) -> list[dict[str, str]]:
    """The first Markdown table under ``section`` as dicts."""
    lines = [ln for ln in md.split(section, 1)[1].splitlines() if ln.startswith("|")]
    out, header = [], None
    for ln in lines:
        cells = [c.strip() for c in ln.strip("|").split(" | ")]
        if header is None:
            header = cells
        elif not set(ln) <= set("|-: "):
            out.append(dict(zip(header, cells)))
        if out and not ln.startswith("|"):
            break
    return out


class _Checker(HTMLParser):
    VOID = {"img", "br", "hr", "meta", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.images, self.errors = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))
        elif tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


def test_report_from_a_fabricated_run(home):
    from defsentflow.report import build_report
    from defsentflow.storage import Catalog

    _fabricate(home)
    rep = build_report(RUN)
    assert rep.dir == home / "reports" / RUN and rep.markdown_path.is_file() and rep.html_path.is_file()
    md = rep.markdown_path.read_text()
    # results first, the config last; every section once
    order = ["# run `run-fixture`", "**Status: completed**", "**Trained:**", "**Selected model:** `pst-run-fixture`",
             "## Headline figures", "## All models of this run and the baselines", "## PST progress",
             "### Entry space per step", "## Harvested pairs", "## Lineage", "### Stages", "### Artifacts",
             "## Configuration"]
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    assert all(md.count(h + "\n") <= 1 for h in order if h.startswith("#"))
    assert md.count("PST progress") == 1
    assert "Note:" not in md and '"status": "completed"' not in md  # no raw JSON note
    assert f"`{home / 'models' / 'pst'}`" in md  # where the selected model is
    # headline figures: untrained (step 0 'minilm', mean pooling) against the selected model, with deltas
    head = {r["score"]: r for r in _table(md, "## Headline figures")}
    sts12, stsb, revdict = "`sts12_test_spearman`", "`stsb_dev_spearman`", "`revdict_test_unseen_head_mrr`"
    assert set(head) >= {sts12, stsb, revdict}
    assert head[sts12]["untrained (minilm)"] == "72.37" and head[sts12][f"selected (pst-{RUN})"] == "65.00"
    assert head[sts12]["delta (selected - untrained)"] == "-7.37" and head[stsb]["split"] == "dev"
    assert head[revdict]["untrained (minilm)"] == ""
    assert "2 stage records, 1 taken from the cache." in md and "| harvest-pairs | cached |" in md
    assert "corpus:abcdef01" in md  # artifact inputs with their hashes
    assert "steps: 2" in md and md.rstrip().endswith("```")  # the config as YAML, last
    assert "| 1e-05 |" in md and "0.0000" not in md  # numbers written for their scale
    # the run's models beside the baselines, one row each; another run's model stays out
    models = {(r["model_id"], r["pooling"]): r for r in _table(md, "## All models of this run")}
    assert models[("minilm", "mean")]["role"] == "untrained (PST step 0)"
    assert models[("minilm", "sbert_wk")]["role"] == "baseline (SBERT-WK)"
    assert models[(f"pst-{RUN}", "cls")]["role"] == "selected (this run)"
    assert models[("minilm-bare", "mean")]["role"] == "baseline"
    assert list(models)[0] == ("minilm", "mean")  # ranked by the selection figure, STS-B dev
    assert "foreign" not in md and "dsp-old" not in md
    assert md.split("## Headline figures")[1].splitlines()[3].endswith("---:|")  # deltas right-aligned
    # images: scores, PST progress, one entry-space plot per step matrix, two label histograms
    assert set(rep.images) == {"img/headline.png", "img/pst_progress.png", "img/loss_curves.png",
                               "img/entry_space/step-01-1.png", "img/entry_space/step-02-2.png", "img/labels-1.png",
                               "img/labels-2.png"}
    for rel in rep.images:
        assert (rep.dir / rel).read_bytes()[:4] == b"\x89PNG" and f"]({rel})" in md
    # step 2 had no statistics: the report computed and recorded them
    rows = Catalog().query("SELECT step, isoscore FROM entry_space_stats WHERE run_id = ? ORDER BY step", [RUN])
    assert [r["step"] for r in rows] == [1, 2] and all(0 <= r["isoscore"] <= 1 for r in rows)
    # HTML: a complete document, balanced tags, relative image paths that exist
    html = rep.html_path.read_text()
    assert html.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in html
    chk = _Checker()
    chk.feed(html)
    chk.close()
    assert not chk.errors and not chk.stack
    assert {i["src"] for i in chk.images} == set(rep.images)
    assert all(not Path(i["src"]).is_absolute() and i.get("alt") for i in chk.images)
    assert "<table>" in html and '<div class="table-box">' in html  # wide tables scroll in their box
    assert html.index("<details") > html.index("## Lineage".replace("## ", "")) and "steps: 2" in html.split("<details")[1]
    # chosen: only the candidate the run returned; step_best: the best of each step
    pst = _table(md, "## PST progress")
    assert [(r["step"], r["model_id"]) for r in pst if r["chosen"] == "yes"] == [("1", f"pst-{RUN}")]
    assert sum(r["step_best"] == "yes" for r in pst) == 3
    assert "**Why:** Step 1 scored best on STS-B dev Spearman (80.00), ahead of the untrained encoder (75.00) " \
           "and step 2 (79.00)." in md
    assert "Label quality" not in md  # no harvest labels measured in this run
    # registered as an artifact of the run; regenerating replaces it
    build_report(RUN)
    assert len(Catalog().query("SELECT * FROM artifacts WHERE kind = 'report' AND run_id = ?", [RUN])) == 1


def test_report_of_a_bare_run_and_the_cli(home, tmp_path, capsys):
    from defsentflow.storage import Catalog

    Catalog().start_run("evaluate", run_id="bare")
    out = tmp_path / "out"
    assert main(["report", "bare", "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "No stages recorded" in md and "No evaluation results" in md and "## PST progress" not in md
    assert "**Status: running**" in md and "Nothing trained" in md
    assert not (out / "img").exists()  # no chart without data
    assert (out / "report.html").is_file()
    assert main(["report", "missing-run"]) == 2
    assert "no run 'missing-run'" in capsys.readouterr().err


def test_report_status_given_by_the_run_that_writes_it_and_a_failed_run(home):
    import os

    from defsentflow.report import build_report
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.start_run("pipeline", config={"name": "x"}, run_id="live")
    cat.execute("UPDATE runs SET note = ? WHERE run_id = 'live'", [json.dumps({"pid": os.getpid(), "host": "h"})])
    md = build_report("live", status="completed").markdown
    assert "**Status: completed**" in md and "pid" not in md
    cat.start_run("pipeline", run_id="broken")
    cat.end_run("broken", "failed", note=json.dumps({"error": "RuntimeError: out of memory"}), flow="pipeline")
    md = build_report("broken").markdown
    assert "**Status: failed**" in md and "**Error:** RuntimeError: out of memory" in md
    with pytest.raises(ValueError), cat.recorded_run("pipeline", "typo"):  # the one-line reason the lifecycle writes
        raise ValueError("pst.base_model: unknown model 'minilm-l12'\nnewest ids: x")
    md = build_report("typo").markdown
    assert "**Status: failed**" in md and "ValueError: pst.base_model: unknown model 'minilm-l12' newest ids: x" in md


@pytest.mark.parametrize("value,cell", [(None, ""), (True, "yes"), (0.12345, "0.1235"), (72.371, "72.37"),
                                        (1e-5, "1e-05"), (2e-4, "0.0002"), (0.0, "0"), (1500, "1500"),
                                        (127000, "127,000"), ("a|b\nc", "a\\|b c")])
def test_markdown_cells(value, cell):
    from defsentflow.report import markdown_table

    assert markdown_table(["x"], [[value]]).splitlines()[2] == f"| {cell} |"


PROBE = "<img src=x onerror=alert(document.domain)>"


def test_strings_from_the_config_and_the_error_are_escaped(home):
    """Issue 22's stored-script probe: a failed run whose config and error carry a tag; the report
    shows it as text and no live tag reaches report.html."""
    from defsentflow.report import build_report
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.start_run("pipeline", config={"name": PROBE, "pst": {"base_model": PROBE, "dictionary": "a`|b", "steps": 1}},
                  run_id="xss")
    cat.end_run("xss", "failed", note=json.dumps({"error": f"stage pst: base_model {PROBE!r}: not found"}), flow="pipeline")
    rep = build_report("xss")
    md, page = rep.markdown, rep.html_path.read_text()
    text, config = md.split("## Configuration")
    import re

    outside_code = re.sub(r"`[^`]*`", "", text)  # a code span's content is literal in every renderer
    assert "<img" not in outside_code.replace("\\<img", "")
    assert "**Error:** stage pst: base_model '\\<img src=x onerror=alert(document.domain)\\>'" in text
    assert "```yaml" in config  # inside a fenced block, which every renderer writes as text
    chk = _Checker()
    chk.feed(page)
    chk.close()
    assert not chk.images and not chk.errors  # the probe is text, not an element
    assert "<img" not in page and "&lt;img src=x onerror=alert(document.domain)&gt;" in page
    assert page.count("<script") == 0 and "onerror=alert" in page  # shown, inert


def test_requested_tasks_shown_where_the_catalog_records_them(home):
    from defsentflow.report import build_report
    from defsentflow.storage import Catalog

    cat = Catalog()
    cat.start_run("pipeline", config={"name": "t"}, run_id="tasks")
    assert "## Requested tasks" not in build_report("tasks").markdown  # no run_tasks rows for this run
    cat.execute("INSERT INTO run_tasks (run_id, task, status, reason, evaluated_as) "
                "VALUES ('tasks', 'sickr', 'fallback', 'SICK test missing: trial used', 'sickr-trial')")
    md = build_report("tasks").markdown
    assert "## Requested tasks" in md and "| sickr | fallback | SICK test missing: trial used |" in md
