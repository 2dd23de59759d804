"""Prefect retries: I/O tasks and harvest batches retry transient failures after a delay, not bad input."""

from __future__ import annotations

import pytest
from prefect import flow, task

from defsentflow.scoring.config import HarvestConfig
from defsentflow.tasks.retries import IO_RETRIES, TRAIN_RETRIES


def test_io_tasks_and_harvest_batches_retry_with_a_delay():
    from defsentflow.tasks import corpus, dictionary, evaluation, harvest, pretrain, report, training

    batches = harvest.harvest_tasks(HarvestConfig.model_validate({"corpus": {"name": "c"}})).fan_out
    assert batches.retries["retries"] == 2 and batches.retries["retry_delay_seconds"] == [5, 30]
    io = [harvest.HARVEST_TASKS.prepare, harvest.HARVEST_TASKS.build_index,
          harvest.HARVEST_TASKS.finalize, dictionary.DICTIONARY_TASKS.build, dictionary.DICTIONARY_TASKS.register,
          corpus.ingest_corpus, corpus.build_index, evaluation.EVALUATE_TASKS.record, evaluation.EVALUATE_TASKS.resolve,
          report.write_run_report, pretrain.PRETRAIN_TASKS.ingest_corpus]
    for t in io:
        assert t.retries == 2 and t.retry_delay_seconds == [5, 30], t.name
    for t in (training.PST_TASKS.build_matrix, training.DEFSENT_TASKS.train, pretrain.PRETRAIN_TASKS.train,
              harvest.HARVEST_TASKS.train_scorer, harvest.train_surrogate_encoder):
        assert t.retries == 1 and t.retry_delay_seconds == 30, t.name


@pytest.mark.parametrize("error, attempts", [(RuntimeError("catalog locked"), 2), (ValueError("bad record"), 1)])
def test_transient_failures_are_retried_and_input_errors_are_not(error, attempts):
    calls = []

    @task(**{**IO_RETRIES, "retry_delay_seconds": 0, "retry_jitter_factor": None})
    def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise error
        return len(calls)

    @flow
    def run() -> int:
        return flaky(return_state=True).result(raise_on_failure=False)

    out = run()
    assert len(calls) == attempts
    assert (out == 2) if attempts == 2 else isinstance(out, ValueError)
    assert TRAIN_RETRIES["retry_condition_fn"] is IO_RETRIES["retry_condition_fn"]
