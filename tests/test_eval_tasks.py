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
