"""The one task table (defsentflow/eval_tasks.py): its readers agree with it, unknown names are
refused at config validation with the valid list, and every figure has one name."""

from __future__ import annotations

import pytest

from defsentflow.eval_tasks import (
    AVERAGE_TASKS,
    DEFAULT_TASKS,
    EVAL_TASKS,
    STS_TASKS,
    metric_column,
    split_group,
    task_parts,
)


def test_readers_and_the_cli_read_the_table():
    from defsentflow.cli.evaluate import _DEFAULT_TASKS
    from defsentflow.evaluation.config import EvalConfig, EvalSection
    from defsentflow.evaluation.sts import SEVEN_TASKS
    from defsentflow.evaluation.sts_data import STS_YEARS, STSB_FILES, TASKS, task_files

    assert TASKS == tuple(STS_TASKS) and SEVEN_TASKS == AVERAGE_TASKS == (
        "sts12", "sts13", "sts14", "sts15", "sts16", "stsb-test", "sickr")
    assert EvalConfig().tasks == DEFAULT_TASKS and _DEFAULT_TASKS == ",".join(DEFAULT_TASKS)
    assert EvalSection().tasks == (*DEFAULT_TASKS, "revdict")
    for name, spec in STS_TASKS.items():  # the readers open the files the table names
        files = task_files("/d", name, sick_split="test")
        want = spec.files[0].rsplit("/", 1)[1]
        assert all((f.parent.name if spec.subsets else f.name) == want for f in files), (name, files)
    assert STS_YEARS["sts13"] == ("STS13-en-test", STS_TASKS["sts13"].subsets) and STSB_FILES["stsb-dev"] == "sts-dev.csv"


@pytest.mark.parametrize("section", ["EvalConfig", "EvalSection"])
def test_unknown_task_names_are_refused_at_validation_with_the_valid_list(section):
    from pydantic import ValidationError

    from defsentflow.evaluation import config

    with pytest.raises(ValidationError, match=r"unknown task\(s\) \['stsb'\]; valid: sts12, .*sickr-train, revdict"):
        getattr(config, section).model_validate({"tasks": ["stsb-dev", "stsb"]})


@pytest.mark.parametrize("task,setting,metric,name,group", [
    ("sts12", "all", "spearman", "sts12_test_spearman", "test"),
    ("stsb-dev", "all", "spearman", "stsb_dev_spearman", "dev"),
    ("sickr-trial", "all", "spearman", "sickr_trial_spearman", "test"),
    ("revdict", "head", "mrr", "revdict_test_unseen_head_mrr", "test"),
    ("revdict-dev", "hybrid", "mrr", "revdict_dev_unseen_hybrid_mrr", "dev"),
    ("revdict-dev-papers", "cosine", "top1", "revdict_dev_papers_cosine_top1", "dev"),
    ("wordpred-dev", "head", "mrr", "wordpred_dev_unseen_head_mrr", "dev"),
])
def test_one_name_per_figure(task, setting, metric, name, group):
    assert metric_column(task, setting, metric) == name and split_group(task) == group
    assert task_parts(task)[0] in {t.split("-")[0] for t in EVAL_TASKS}


@pytest.mark.parametrize("task,setting,metric,name", [
    ("revdict+q500+splitcands", "cosine", "mrr", "revdict_test_unseen_q500_splitcands_cosine_mrr"),
    ("revdict-dev-multidef+len64", "head", "mrr", "revdict_dev_multidef_len64_head_mrr"),
    ("wordpred-alldefs+tiesmid", "mlm_head", "mrr@10", "wordpred_test_alldefs_tiesmid_mlm_head_mrr_10"),
    ("sts12+bf16", "all", "spearman", "sts12_test_bf16_spearman"),
])
def test_a_figure_name_carries_every_setting_that_changes_it(task, setting, metric, name):
    assert metric_column(task, setting, metric) == name


def test_non_canonical_settings_become_variant_tokens():
    from defsentflow.eval_tasks import CANONICAL, FigureSettings, dictionary_task, task_parts

    assert dictionary_task("revdict", "test", "unseen") == "revdict"
    assert dictionary_task("revdict", "dev", "multi-definition", FigureSettings(max_queries=10)) == "revdict-dev-multidef"
    assert dictionary_task("wordpred", "test", "all-definitions") == "wordpred-alldefs"
    every = FigureSettings(max_length=64, autocast="bf16", max_queries=None, candidates="split", ties="optimistic")
    assert dictionary_task("revdict", "dev", "unseen", every) == "revdict-dev+qall+splitcands+tiesopt+len64+bf16"
    assert dictionary_task("wordpred", "dev", "unseen", every) == "wordpred-dev+qall+tiesopt+len64+bf16"  # no candidate set
    assert task_parts("revdict-dev+q5") == ("revdict", "dev", "unseen", ("q5",))
    assert FigureSettings(max_length=CANONICAL.max_length).tokens("sts") == ()
    with pytest.raises(ValueError, match="protocol must be one of"):
        dictionary_task("revdict", "test", "all-definitions")


def test_the_catalog_reads_the_registry():
    """The STS average's members and each family's main metric come from the registry, not a copy."""
    import duckdb

    from defsentflow.eval_tasks import TASKS
    from defsentflow.storage import sql_dir
    from defsentflow.storage.schema import ddl_files

    con = duckdb.connect()
    for _, _, text in ddl_files():
        con.execute(text)
    avg = {r[0] for r in con.execute("SELECT task FROM eval_task_registry WHERE in_average").fetchall()}
    assert avg == set(AVERAGE_TASKS)
    main = dict(con.execute("SELECT task, main_metric FROM eval_task_registry WHERE kind <> 'average'").fetchall())
    assert main == {t.name: t.main_metric for t in TASKS.values()}
    for f in ("040_evaluation.sql", "100_leaderboard.sql"):   # the average's members are read, never listed
        text = (sql_dir() / f).read_text()
        assert "IN ('sts12'" not in text and "'stsb-test', 'sickr'" not in text and "coalesce(w.sts12, 0)" not in text
