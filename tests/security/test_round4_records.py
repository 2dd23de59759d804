"""Issue 44 (round 4): a symlink inside the data root that leads out, row records held to the artifact
records' rules, and a rebuild that never loses or hides what was there. Each test is one attack of the
issue, named by its id (N28, N1, ...), on a copy of a small finished root built once per module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from defsentflow.cli import main
from defsentflow.model.ids import base_model_id
from defsentflow.storage import Catalog, hash_path
from defsentflow.storage.paths import OutsideRootError, inside_root, root_path
from defsentflow.storage.rebuild import rebuild_catalog
from defsentflow.storage.records import read_record
from defsentflow.storage.row_records import row_record_path
from tests.cli_output import without_root_line

KEY = "0123456789abcdef0123456789abcdef"
RUN = "demo-1"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A data root as a finished PST run leaves it: the selected model with its metrics, a run with
    its PST result, a report (built once; each test works on its own copy)."""
    home = tmp_path_factory.mktemp("round4") / "home"
    model = home / "models" / "pst" / KEY
    model.mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights" * 100)
    (model / "config.json").write_text("{}")
    cat = Catalog(home)
    cat.start_run("pipeline", config={"name": "demo"}, run_id=RUN)
    cat.register_artifact(KEY, "model", model, hash_path(model), name="dsp-1", run_id=RUN)
    cat.register_model("dsp-1", model, method="defsent_plus", pooling="mean", run_id=RUN, artifact_key=KEY)
    cat.register_model(f"pst-{RUN}", model, method="pst", pooling="mean", run_id=RUN, artifact_key=KEY)
    cat.record_metrics("dsp-1", [{"task": "revdict-dev", "setting": "cosine", "metric": "mrr", "value": 0.25}],
                       run_id=RUN)
    cat.execute("INSERT INTO pst_runs (run_id, model_id, winner_model_id, winner_step) VALUES (?, ?, 'dsp-1', 1)",
                [RUN, f"pst-{RUN}"])
    report = home / "reports" / RUN
    report.mkdir(parents=True)
    (report / "report.html").write_text("<p>ours</p>")
    cat.register_artifact(f"report-{RUN}", "report", report, hash_path(report), name=f"report-{RUN}", run_id=RUN)
    cat.end_run(RUN, "completed", flow="pipeline")
    return home


@pytest.fixture()
def root(finished, home) -> Path:
    shutil.rmtree(home)
    shutil.copytree(finished, home, symlinks=True)
    Catalog._ddl_applied.clear()
    return home


@pytest.fixture()
def outside(tmp_path) -> Path:
    """A folder outside the data root holding files an attacker wants read or written."""
    out = tmp_path / "elsewhere"
    out.mkdir()
    (out / "security.md").write_text("secret")
    (out / "report.html").write_text("<p>not yours</p>")
    return out


def _rebuild_from_scratch(root: Path) -> dict:
    (root / "catalog.duckdb").unlink()
    Catalog._ddl_applied.clear()
    return rebuild_catalog(root)


def _edit_row_record(root: Path, kind: str, ident: str, change) -> Path:
    path = row_record_path(root, kind, ident)
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def _model_row(data: dict, **values) -> None:
    body = data["tables"]["models"]
    for col, value in values.items():
        body["rows"][0][body["columns"].index(col)] = value


# -- item 1: one rule for every path under the root ------------------------------------------------------------
def test_n28_a_report_folder_replaced_by_a_link_leading_out_is_not_served(root, outside):
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    with TestClient(create_app(root, max_batch=1, max_wait_ms=1)) as client:
        assert client.get(f"/runs/{RUN}/report/report.html").text == "<p>ours</p>"
        shutil.rmtree(root / "reports" / RUN)
        (root / "reports" / RUN).symlink_to(outside)  # while serve runs
        for name in ("security.md", "report.html"):
            answer = client.get(f"/runs/{RUN}/report/{name}")
            assert answer.status_code == 404 and "secret" not in answer.text and "not yours" not in answer.text


def test_the_path_rule_refuses_links_dot_dot_and_folders_not_of_the_layout(root, outside):
    (root / "cache").symlink_to(outside)
    for bad in (("cache", "x"), ("reports", "..", "..", "x"), ("nowhere", "x")):
        with pytest.raises(OutsideRootError, match="escapes the data root"):
            root_path(root, *bad)
    with pytest.raises(OutsideRootError):
        inside_root(root, root / "cache" / "security.md")
    assert root_path(root, "reports", RUN) == (root / "reports" / RUN).resolve()


@pytest.mark.parametrize("folder", ["records", "locks"])
def test_n5_a_records_or_locks_link_leading_out_receives_no_catalog_write(root, outside, folder, capsys):
    shutil.rmtree(root / folder)
    (root / folder).symlink_to(outside)
    before = sorted(p.name for p in outside.rglob("*"))
    with pytest.raises(OutsideRootError, match=f"path {folder}/.* escapes the data root"):
        Catalog(root).start_run("pipeline", config={"name": "demo"}, run_id="r2")
    assert sorted(p.name for p in outside.rglob("*")) == before
    # through the CLI: one line, exit 2
    assert main(["--home", str(root), "catalog", "rebuild"]) == 2
    err = without_root_line(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and "escapes the data root" in err[0], err
    assert sorted(p.name for p in outside.rglob("*")) == before


def test_n6_a_quarantine_link_leading_out_receives_no_refused_record(root, outside):
    (root / "quarantine").symlink_to(outside)
    _edit_row_record(root, "model", "dsp-1", lambda d: _model_row(d, path="../m"))
    counts = _rebuild_from_scratch(root)
    assert counts["refused"] == 1 and counts["quarantined"] == 0  # refused, left where it is
    assert sorted(p.name for p in outside.rglob("*")) == ["report.html", "security.md"]


def test_artifact_writes_refuse_a_folder_of_the_root_that_leads_out(root, outside):
    from defsentflow.storage import atomic_dir, atomic_path

    shutil.rmtree(root / "models")
    (root / "models").symlink_to(outside)
    with pytest.raises(OutsideRootError), atomic_dir(root / "models" / "pst" / "new"):
        pass
    with pytest.raises(OutsideRootError), atomic_path(root / "models" / "x.json") as tmp:
        tmp.write_text("{}")
    assert sorted(p.name for p in outside.rglob("*")) == ["report.html", "security.md"]


# -- item 2: row records held to the artifact records' rules --------------------------------------------------
@pytest.mark.parametrize(("attack", "change", "reason"), [
    ("N1 NaN", lambda d: d["tables"]["metrics"]["rows"][0].__setitem__(4, float("nan")), "finite numbers only"),
    ("N1 +Infinity", lambda d: d["tables"]["metrics"]["rows"][0].__setitem__(4, float("inf")), "finite numbers only"),
    ("N1 -Infinity", lambda d: d["tables"]["metrics"]["rows"][0].__setitem__(4, float("-inf")), "finite numbers only"),
    ("N2 ../m", lambda d: _model_row(d, path="../m"), "is not a plain path"),
    ("N2 models/../../m", lambda d: _model_row(d, path="models/../../m"), "is not a plain path"),
    ("N2 absolute", lambda d: _model_row(d, path="/etc"), "only an external base model's folder may be"),
    ("N2 not a root folder", lambda d: _model_row(d, path="elsewhere/m"), "not a path of the data root's folders"),
])
def test_n1_n2_row_records_hold_finite_numbers_and_paths_of_the_root(root, attack, change, reason):
    before = Catalog(root).query("SELECT model_id, path FROM models ORDER BY 1")
    _edit_row_record(root, "model", "dsp-1", change)
    counts = _rebuild_from_scratch(root)
    assert counts["refused"] == 1 and reason in counts["problems"][0], (attack, counts["problems"])
    cat = Catalog(root)
    assert not cat.query("SELECT 1 FROM metrics WHERE NOT isfinite(value)")
    # refused alone: the other model and the run are there as before
    assert cat.query("SELECT model_id, path FROM models ORDER BY 1") == [r for r in before if r["model_id"] != "dsp-1"]
    assert cat.query("SELECT count(*) AS n FROM runs")[0]["n"] == 1


def test_n1_a_forged_base_model_row_cannot_rename_another_folder(root, tmp_path):
    folder = tmp_path / "bert"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    cat = Catalog(root)
    cat.register_model("evil", folder, method="pst")  # written through the catalog: refused at rebuild
    _rebuild_from_scratch(root)
    assert not Catalog(root).query("SELECT 1 FROM models WHERE model_id = 'evil'")


@pytest.mark.parametrize("ident", ["a\x00b", "a\nb", "a\x1b[2Jb", "a\u202eb"])
def test_n3_control_characters_in_row_record_ids_are_refused(root, ident):
    path = row_record_path(root, "model", "dsp-1")
    data = json.loads(path.read_text())
    data["id"] = ident
    forged = path.with_name("forged.json")
    forged.write_text(json.dumps(data))
    counts = _rebuild_from_scratch(root)
    assert counts["refused"] == 1 and "is not allowed (a control character)" in counts["problems"][0]
    assert Catalog(root).query("SELECT count(*) AS n FROM models")[0]["n"] == 2


def test_n13_a_base_model_id_names_its_folder_by_content_wherever_it_is_asked_from(root, tmp_path, monkeypatch):
    from defsentflow.model.lookup import find_model
    from defsentflow.storage.hashing import model_folder_hash

    base = tmp_path / "work" / "bert"
    base.mkdir(parents=True)
    (base / "config.json").write_text('{"a": 1}')
    ident = base_model_id("bert")  # the name it was given, its content hash beside it
    monkeypatch.chdir(tmp_path / "work")
    Catalog(root).register_model(ident, "bert", method="base",  # relative to the current directory
                                 meta={"base_model_hash": model_folder_hash(base)})
    other = tmp_path / "other" / "bert"
    other.mkdir(parents=True)
    (other / "config.json").write_text('{"b": 2}')
    monkeypatch.chdir(tmp_path / "other")  # a folder of the same name here
    assert find_model(ident, root=root).path == str(base)
    (base / "config.json").write_text('{"a": 2}')  # the folder changed: the id no longer names it
    with pytest.raises(ValueError, match=f"model {ident} names the files with content hash"):
        find_model(ident, root=root)
    counts = _rebuild_from_scratch(root)
    assert any(ident in line and "content hash" in line for line in counts["left_out"]), counts


# -- item 3: a rebuild that never loses or hides history --------------------------------------------------------
def test_n4_a_lost_root_id_is_recovered_from_the_records_not_minted_anew(root):
    original = (root / "records" / ".root-id").read_text()
    (root / "records" / ".root-id").unlink()  # a copy that skips dot-files
    Catalog(root).start_run("pipeline", config={"name": "demo"}, run_id="r2")  # the next write
    assert (root / "records" / ".root-id").read_text() == original
    (root / "records" / ".root-id").write_text("garbage")
    counts = _rebuild_from_scratch(root)
    assert counts["refused"] == 0 and counts["runs"] == 2 and counts["models"] == 2
    assert (root / "records" / ".root-id").read_text() == original


def test_f9_a_run_record_from_another_root_never_registers_a_run_here(tmp_path):
    other, here = tmp_path / "other", tmp_path / "here"
    Catalog(other).start_run("pipeline", config={"name": "x"}, run_id="foreign")
    with Catalog(here).connect():  # a fresh root: its catalog gets its id at creation
        pass
    (here / "records" / "runs").mkdir(parents=True)
    shutil.copy(row_record_path(other, "run", "foreign"), row_record_path(here, "run", "foreign"))
    counts = rebuild_catalog(here)
    assert counts["runs"] == 0 and "written in another data root" in counts["problems"][0]


def test_n8_a_record_that_would_break_the_real_restore_is_refused_alone(root):
    cat = Catalog(root)
    cat.record_metrics("huge", [{"task": "t", "setting": "s", "metric": "m", "value": 0.5}])
    many = 100_001  # distinct figures, each a leaderboard column: more than the view's pivot takes (100,000)
    cols = ["model_id", "task", "setting", "metric", "value"]
    _edit_row_record(root, "model", "huge", lambda d: d["tables"].__setitem__("metrics", {
        "columns": cols, "rows": [["huge", f"task{i}-dev", "s", "mrr", 0.5] for i in range(many)]}))
    t0 = time.monotonic()
    counts = _rebuild_from_scratch(root)
    seconds = time.monotonic() - t0
    assert counts["refused"] == 1 and "leaderboard view cannot be built" in counts["problems"][0], counts["problems"]
    assert counts["runs"] == 1 and counts["models"] == 2 and counts["metrics"] == 1
    assert main(["--home", str(root), "leaderboard", "--json"]) == 0  # the catalog works
    assert seconds < 60, seconds


def test_m7_a_rebuild_of_20000_metrics_takes_seconds(root):
    cols = ["model_id", "task", "setting", "metric", "value", "n"]
    rows = [["dsp-1", "revdict-dev", f"s{i // 4}", ("mrr", "top1", "top10", "top100")[i % 4], 0.5, 50]
            for i in range(20_000)]
    _edit_row_record(root, "model", "dsp-1", lambda d: d["tables"].__setitem__("metrics", {"columns": cols, "rows": rows}))
    t0 = time.monotonic()
    counts = _rebuild_from_scratch(root)
    seconds = time.monotonic() - t0
    assert counts["refused"] == 0 and counts["metrics"] == 20_000
    assert seconds < 30, f"{seconds:.1f}s"  # was 96 s; 2-4 s here at load 4


def test_n11_a_flipped_bit_hides_nothing_for_good_and_best_model_never_names_another(root, tmp_path, capsys):
    config = tmp_path / "demo.yaml"
    config.write_text(yaml.safe_dump({"name": "demo", "home": str(root), "dictionary": {
        "name": "d", "sources": [{"kind": "jsonl", "paths": [str(tmp_path / "d.jsonl")]}]},
        "pst": {"base_model": "minilm", "dictionary": "d"}}))
    assert main(["best-model", str(config)]) == 0
    assert capsys.readouterr().out.strip() == str(root / "models" / "pst" / KEY)
    weights = root / "models" / "pst" / KEY / "model.safetensors"
    genuine = weights.read_bytes()
    weights.write_bytes(bytes([genuine[0] ^ 1]) + genuine[1:])
    counts = _rebuild_from_scratch(root)
    assert counts["refused"] == 1 and "files are not the ones it describes" in counts["problems"][0]
    assert main(["best-model", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"run {RUN} selected model pst-{RUN}, but it is not in the catalog" in err and len(err.splitlines()) == 1
    weights.write_bytes(genuine)  # the file restored
    counts = rebuild_catalog(root)
    assert counts["returned"] == [f"models/pst/{KEY}/.defsentflow-record.json"] and counts["refused"] == 0
    assert read_record(root / "models" / "pst" / KEY)["key"] == KEY
    assert main(["best-model", str(config)]) == 0
    assert capsys.readouterr().out.strip() == str(root / "models" / "pst" / KEY)


def test_n14_a_rebuild_holds_the_writer_lock_and_a_writer_waits_saying_so(root):
    writer = textwrap.dedent(f"""
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        from defsentflow.storage import Catalog
        print("ready", flush=True)
        Catalog({str(root)!r}).start_run("pipeline", config={{"name": "x"}}, run_id="during")
    """)
    with Catalog(root).exclusive():
        proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "DEFSENTFLOW_HOME": str(root)})
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # the writer is at the lock now: it waits, it does not write
        assert proc.poll() is None and not (root / "records" / "runs" / "during.json").exists()
        counts = rebuild_catalog(root)  # re-entrant in the holding process
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "waiting for `defsentflow catalog rebuild` to finish" in err
    assert counts["runs"] == 1
    assert {r["run_id"] for r in Catalog(root).query("SELECT run_id FROM runs")} == {RUN, "during"}
    counts = _rebuild_from_scratch(root)  # and the run's rows survive the next rebuild
    assert counts["runs"] == 2


def test_f16_a_model_whose_folder_is_gone_leaves_no_ghost_row_anywhere(root, capsys):
    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    cat = Catalog(root)
    cat.record_metrics("hub/model", [{"task": "revdict-dev", "setting": "cosine", "metric": "mrr", "value": 0.1}])
    cat.execute("INSERT INTO models (model_id, path) VALUES ('base:bert', 'bert-base-uncased')")  # a hub name
    cat.record_metrics("base:bert", [{"task": "revdict-dev", "setting": "cosine", "metric": "mrr", "value": 0.2}])

    def board() -> dict:
        assert main(["--home", str(root), "leaderboard", "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    assert [r["model_id"] for r in board()["rows"]] == ["dsp-1", "base:bert", "hub/model"]
    shutil.rmtree(root / "models" / "pst" / KEY)  # deleted by hand; its metrics rows stay
    shown = board()
    assert [r["model_id"] for r in shown["rows"]] == ["base:bert", "hub/model"]  # a name or metrics alone: kept
    assert shown["gone"] == {"dsp-1": f"models/pst/{KEY}"}
    assert f"left out, their folders gone: dsp-1 (models/pst/{KEY})" in shown["sort_note"]
    assert main(["--home", str(root), "leaderboard"]) == 0
    printed = capsys.readouterr().out
    # the table has no row of it; the note (wrapped to 120 columns) names it
    assert f"dsp-1 (models/pst/{KEY})" in " ".join(printed.split()) and "dsp-1 " not in printed.split("\n\n")[0]
    with TestClient(create_app(root, max_batch=1, max_wait_ms=1)) as client:
        assert [r["model_id"] for r in client.get("/api/leaderboard").json()["rows"]] == ["base:bert", "hub/model"]
        page = client.get("/leaderboard").text
        assert f"dsp-1 (models/pst/{KEY})" in page and ">dsp-1<" not in page
    assert Catalog(root).query("SELECT count(*) AS n FROM metrics WHERE model_id = 'dsp-1'")[0]["n"] == 1  # kept


def test_sweeps_are_kept_as_row_records_and_rebuilt(root):
    cat = Catalog(root)
    cat.execute("INSERT INTO sweeps (sweep, path, n_points) VALUES ('lr', '/home/me/lr.yaml', 1)")
    cat.execute("INSERT INTO sweep_points (sweep, point_id, position, config_path, status) "
                "VALUES ('lr', 'p1', 1, 'sweeps/lr/p1.yaml', 'completed')", keep=("sweep", ["lr"]))
    before = cat.query("SELECT * FROM sweep_points")
    counts = _rebuild_from_scratch(root)
    assert counts["refused"] == 0 and Catalog(root).query("SELECT * FROM sweep_points") == before
    _edit_row_record(root, "sweep", "lr", lambda d: d["tables"]["sweep_points"]["rows"][0].__setitem__(
        d["tables"]["sweep_points"]["columns"].index("config_path"), "../../etc/passwd"))
    counts = _rebuild_from_scratch(root)
    assert counts["refused"] == 1 and "config_path" in counts["problems"][0]



def test_n20_a_run_heals_a_catalog_left_unreadable(root):
    from defsentflow.storage.rebuild import heal_catalog

    (root / "catalog.duckdb").write_bytes(b"half a database" * 1000)  # a crash or a full disk mid-write
    Catalog._ddl_applied.clear()
    counts = heal_catalog(root)  # what `run` does first
    assert counts is not None and counts.get("corrupt_moved") == 1 and counts["runs"] == 1
    assert len(list(root.glob("catalog.duckdb.corrupt-*"))) == 1
    assert Catalog(root).query("SELECT count(*) AS n FROM models")[0]["n"] == 2
    assert heal_catalog(root) is None
