"""The evaluation suite and the ``eval`` / ``leaderboard`` commands, on a tiny model and fixture data."""

from __future__ import annotations

import pytest

from defsentflow.cli import main
from defsentflow.evaluation.figures import figure_key
from defsentflow.evaluation.kinds import kind_of
from defsentflow.evaluation.suite import EvalConfig, EvaluateSection, known_model


def _inputs(cfg: EvalConfig) -> list[str]:
    return [kind_of(t).inputs(t, cfg) for t in cfg.tasks]


def _key(cfg: EvalConfig, task: str = "revdict") -> str:
    return figure_key("model-hash", kind_of(task), task, cfg, "mean", kind_of(task).inputs(task, cfg))


def test_config_validates_tasks_and_revdict_needs_a_dictionary(sts_data_dir):
    assert EvalConfig(tasks="sts12, stsb-dev").tasks == ("sts12", "stsb-dev")
    with pytest.raises(ValueError, match="unknown task.*'sts-b'"):
        EvalConfig(tasks=("sts-b",))
    with pytest.raises(ValueError, match="needs a dictionary"):
        EvalConfig(tasks=("revdict",))
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        EvaluateSection(model="m", pooling_mode="cls")
    with pytest.raises(ValueError, match="pooling"):
        EvaluateSection(model="m", pooling="avg")


def test_inputs_hash_follows_the_data_files(sts_data_dir):
    cfg = EvalConfig(tasks=("sts13", "sickr"), data_dir=str(sts_data_dir))
    before = _inputs(cfg)
    assert _inputs(cfg) == before
    gs = sts_data_dir / "sts" / "STS13-en-test" / "STS.gs.FNWN.txt"
    gs.write_text("0.125\n" + gs.read_text().split("\n", 1)[1])
    assert _inputs(cfg) != before


def test_eval_command_prints_records_and_feeds_the_leaderboard(home, tiny_bert_dir, sts_data_dir, capsys):
    rc = main(["--quiet", "eval", str(tiny_bert_dir), "--tasks", "sts12,stsb-dev,sickr", "--data-dir", str(sts_data_dir),
               "--pooling", "cls", "--model-id", "tiny", "--per-subset"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "sts12/MSRpar" in out and "avg of 2/7: sts12,sickr" in out and "recorded" in out
    from defsentflow.storage import Catalog

    cat = Catalog()
    rows = cat.query("SELECT task, setting FROM metrics WHERE model_id = 'tiny' ORDER BY task, setting")
    assert ("sts12", "mean") in {(r["task"], r["setting"]) for r in rows} and len(rows) == 9
    (run,) = cat.query("SELECT run_id, status FROM runs WHERE flow = 'evaluate'")
    assert run["status"] == "completed"
    assert cat.query("SELECT count(*) AS n FROM metrics WHERE run_id = ?", [run["run_id"]])[0]["n"] == 9
    assert main(["leaderboard"]) == 0
    board = capsys.readouterr().out
    assert "tiny" in board and "cls" in board
    # a registered model is found by id and its results are filed under that id
    cat.register_model("registered", tiny_bert_dir, method="base")
    assert known_model(cat, "registered") == ("registered", str(tiny_bert_dir))
    assert known_model(cat, str(tiny_bert_dir))[0] == "registered"


def test_eval_command_errors_exit_2(home, sts_data_dir, tmp_path, capsys):
    assert main(["eval", "minilm", "--tasks", "sts99", "--data-dir", str(sts_data_dir)]) == 2
    assert "unknown task" in capsys.readouterr().err
    assert main(["eval", "minilm", "--tasks", "sts12", "--data-dir", str(tmp_path / "nowhere")]) == 2
    assert "data directory not found" in capsys.readouterr().err
    assert main(["eval", "minilm", "--tasks", "revdict"]) == 2
    assert "needs a dictionary" in capsys.readouterr().err
    assert main(["eval", "minilm", "--pooling", "avg", "--data-dir", str(sts_data_dir)]) == 2
    assert main(["leaderboard"]) == 2  # nothing was recorded: no catalog was created either
    assert "no evaluation results yet" in capsys.readouterr().err


def test_revdict_candidates_reach_the_evaluation_and_its_cache_key(monkeypatch, tmp_path):
    import defsentflow.evaluation.revdict as revdict
    from defsentflow.evaluation.suite import run_evaluation

    seen = {}

    def fake(model, dictionary, **kw):
        seen.update(kw)
        return [{"rows": []} for _ in kw["runs"]]

    monkeypatch.setattr(revdict, "evaluate_revdict_runs", fake)
    cfg = EvalConfig(tasks=("revdict",), dictionary="toy", revdict_candidates="split", data_dir=str(tmp_path))
    run_evaluation("minilm", cfg)
    assert seen["candidates"] == "split"
    # dev (selection) and test (reporting) figures, unseen queries by default
    assert seen["runs"] == [("dev", "unseen"), ("test", "unseen")]
    other = EvalConfig(tasks=("revdict",), dictionary="toy", data_dir=str(tmp_path))
    # the same inputs (the dictionary), other settings: another evaluation
    assert _inputs(cfg) == _inputs(other)
    assert _key(cfg) != _key(other)
    assert _key(other) == _key(other.model_copy(update={"device": "cpu"}))
    with pytest.raises(ValueError, match="revdict_candidates\n  Input should be 'all' or 'split'"):
        EvalConfig(tasks=("revdict",), dictionary="toy", revdict_candidates="test")
    assert EvaluateSection(model="m", revdict_candidates="split").revdict_candidates == "split"
    with pytest.raises(ValueError, match="revdict_modes.0\n  Input should be 'head', 'cosine' or 'hybrid'"):
        EvalConfig(tasks=("revdict",), dictionary="toy", revdict_modes=("words",))
    run_evaluation("minilm", EvalConfig(tasks=("revdict",), dictionary="toy", revdict_modes=("hybrid",),
                                        data_dir=str(tmp_path)))
    assert seen["modes"] == ("hybrid",)


def test_one_eval_model_keeps_each_use_s_defaults():
    """``eval``/the flow and the pipeline's ``eval:`` section share one model; only their defaults differ."""
    from defsentflow.config import config_from_dict
    from defsentflow.evaluation.config import EvalSection

    assert issubclass(EvalSection, EvalConfig) and issubclass(EvaluateSection, EvalConfig)
    cli = EvalConfig()
    assert cli.tasks == ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb-dev", "sickr") and cli.pooling is None
    pipeline = EvalSection()
    assert pipeline.tasks == (*cli.tasks, "revdict") and pipeline.pooling == "mean"
    assert pipeline.data_dir == "../shared/data" and pipeline.baselines == ("untrained", "sbert_wk")
    assert EvalSection.model_validate({"revdict_modes": ["head"]}).revdict_modes == ("head",)  # YAML lists
    with pytest.raises(ValueError, match="leave eval.dictionary out"):
        EvalSection(dictionary="oewn")
    # An unknown task name is refused when the config is read, naming the key and the valid names.
    with pytest.raises(ValueError, match=r"eval.tasks: .*unknown task\(s\) \['sts-b'\]; valid: sts12"):
        config_from_dict({"name": "x", "dictionary": {"name": "d", "sources": [{"kind": "tsv", "paths": ["a.tsv"]}]},
                          "defsent": {"base_model": "minilm"}, "eval": {"tasks": ["sts-b", "revdict"]}})
