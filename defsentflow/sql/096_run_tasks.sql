-- What became of each evaluation task a pipeline run asked for (defsentflow/evaluation/task_status.py).
-- Idempotent: applied on every open. One row per (run, requested task), so no task disappears:
-- evaluated (its files were there), fallback (sickr without the SICK test file: evaluated on the
-- labelled trial split, filed as sickr-trial) or skipped (files missing, unknown name), with the reason.
CREATE TABLE IF NOT EXISTS run_tasks (
    run_id        VARCHAR NOT NULL,            -- runs.run_id of the pipeline run
    task          VARCHAR NOT NULL,            -- the task name as requested in eval.tasks
    status        VARCHAR NOT NULL CHECK (status IN ('evaluated', 'fallback', 'skipped')),
    reason        VARCHAR,                     -- NULL when evaluated as asked
    evaluated_as  VARCHAR,                     -- the metrics.task its figures are filed under (NULL: skipped)
    created_at    TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, task)
);
