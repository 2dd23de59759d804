"""``defsentflow promote``, ``rollback``, ``aliases`` and ``best-model`` on a catalog the test writes."""

from __future__ import annotations

import io

import pytest
import yaml

from defsentflow.storage import Catalog
from tests.integration.tiny_pipeline_utils import cli_here

FIG = "revdict_dev_unseen_q50_len32_cosine_mrr"


def _cli(*args: str) -> tuple[int, str, str]:
    res = cli_here(list(args))
    return res.returncode, res.stdout, res.stderr


@pytest.fixture(scope="module")
def catalog_of_two(tmp_path_factory):
    """One data root for the module: ``good`` (dev figure 0.3) holds demo@champion; ``bad`` (0.1) does
    not. Their folders exist. (A rollback leaves demo@champion where it was: the tests share it.)"""
    from defsentflow.registry import record_change

    tmp = tmp_path_factory.mktemp("registry-cli")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFSENTFLOW_HOME", str(tmp / "home"))
        cat = Catalog()
        for name, value in (("good", 0.3), ("bad", 0.1)):
            folder = tmp / name
            folder.mkdir()
            cat.register_model(name, folder, method="defsent_plus", pooling="mean")
            cat.record_metrics(name, [{"task": "revdict-dev+q50+len32", "setting": "cosine", "metric": "mrr",
                                       "value": value, "pooling": "mean"}])
        record_change(cat, "demo@champion", "good", action="gate", figure=FIG, value=0.3)
    config = tmp / "demo.yaml"
    config.write_text(yaml.safe_dump({"name": "demo", "dictionary": {"name": "d", "sources": [
        {"kind": "jsonl", "paths": [str(tmp / "d.jsonl")]}]}, "pst": {"base_model": "minilm"}}))
    return tmp, config


@pytest.fixture()
def two_models(catalog_of_two, monkeypatch):
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(catalog_of_two[0] / "home"))
    return catalog_of_two


def test_promote_asks_before_a_worse_model_and_rollback_undoes_it(two_models, monkeypatch):
    tmp, config = two_models
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no terminal to ask on
    rc, _, err = _cli("promote", "bad", "--alias", "demo@champion")
    assert rc == 2 and "is below its 0.3" in err and "give --yes" in err and len(err.strip().splitlines()[-1]) < 400
    assert _cli("best-model", str(config))[1].strip() == str(tmp / "good")  # best-model: the champion
    rc, out, _ = _cli("promote", "bad", "--alias", "demo@champion", "--yes")
    assert rc == 0 and "good -> bad" in out and "0.3 -> 0.1" in out
    assert _cli("best-model", str(config))[1].strip() == str(tmp / "bad")
    rc, out, _ = _cli("rollback", "demo@champion")
    assert rc == 0 and "bad -> good" in out
    rc, out, _ = _cli("aliases")
    assert rc == 0 and "demo@champion" in out and "rollback" in out
    rc, out, _ = _cli("aliases", "demo@champion")
    lines = [line.split() for line in out.splitlines()[2:]]
    assert [(w[0], w[3]) for w in lines] == [("1", "gate"), ("2", "promote"), ("3", "rollback")]


@pytest.mark.parametrize(("args", "error"), [
    (["promote", "good", "--alias", "demo"], "write CONFIG@LABEL"),
    (["promote", "nobody", "--alias", "demo@champion"], "unknown model 'nobody'"),
    (["rollback", "demo@champion"], "no earlier model to roll back to"),
    (["rollback", "other@champion"], "no alias 'other@champion'"),
    (["aliases", "other@champion"], "no alias 'other@champion'"),
])
def test_registry_commands_refuse_in_one_line(two_models, args, error):
    rc, _, err = _cli(*args)
    assert rc == 2 and error in err and err.count("defsentflow: error:") == 1, err


def test_promote_takes_models_of_the_catalog_only(two_models):
    tmp, _ = two_models
    (tmp / "loose").mkdir()
    rc, _, err = _cli("promote", str(tmp / "loose"), "--alias", "demo@champion", "--yes")
    assert rc == 2 and "not one of the catalog" in err


def test_a_typo_in_an_alias_is_refused_and_a_retired_alias_is_gone(two_models, monkeypatch, tmp_path):
    """`promote --alias demo@champoin` (one edit from demo@champion) and `dmeo@champion` (a config that
    never ran) are refused with "did you mean"; with --new the alias is made, a command taking a model
    names the aliases for one that is not, and `aliases --retire` takes it out of every list."""
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    for typo, why in (("demo@champoin", "it is one edit from demo@champion"),
                      ("dmeo@champion", "its config 'dmeo' never ran")):
        rc, _, err = _cli("promote", "good", "--alias", typo)
        assert rc == 2 and why in err and "did you mean demo@champion?" in err and "--new" in err, err
    assert "demo@champoin" not in _cli("aliases")[1]
    words = tmp_path / "s.txt"
    words.write_text("a dog\n")
    rc, _, err = _cli("encode", "demo@champoin", "--input", str(words), "--out", str(tmp_path / "v.parquet"))
    assert rc == 2 and "no alias 'demo@champoin'; aliases: demo@champion" in err, err
    # made on purpose: --new; then a rollback to a worse model asks, and shows both figures
    assert _cli("promote", "bad", "--alias", "demo@staging", "--new")[0] == 0
    assert _cli("promote", "good", "--alias", "demo@staging")[0] == 0      # better: no question
    rc, out, err = _cli("rollback", "demo@staging")
    assert rc == 2 and "bad scores lower than good" in err and "0.3 -> 0.1" in out and "give --yes" in err, (out, err)
    rc, out, _ = _cli("rollback", "demo@staging", "--yes")
    assert rc == 0 and "good -> bad (rolled back" in out
    board = _cli("leaderboard")[1]
    assert "demo@staging = bad" in board and "demo@champion = good" in board, board   # each alias's holder marked
    rc, out, _ = _cli("aliases", "--retire", "demo@staging")
    assert rc == 0 and "demo@staging: retired (it named bad)" in out
    assert "demo@staging" not in _cli("aliases")[1] and "retire" in _cli("aliases", "demo@staging")[1]
    assert "demo@staging" not in _cli("leaderboard", "--wide")[1] and "demo@staging" not in _cli("leaderboard")[1]
    rc, _, err = _cli("aliases", "--retire", "demo@staging")
    assert rc == 2 and "no alias 'demo@staging'" in err
