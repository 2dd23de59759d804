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
