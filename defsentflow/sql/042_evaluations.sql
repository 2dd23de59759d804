-- Finished evaluations by content key (defsentflow.evaluation.suite.evaluation_key: the model's
-- content, the content of the task inputs, every setting that changes a figure, the code version):
-- `defsentflow eval` and the evaluate flow file these rows again instead of evaluating again
-- (defsentflow/evaluation/stage.py). A cache: a catalog rebuilt without it evaluates once more.
-- Idempotent: applied on every open.
CREATE TABLE IF NOT EXISTS evaluations (
    eval_key      VARCHAR PRIMARY KEY,
    pooling       VARCHAR,
    rows          JSON NOT NULL,               -- the metric rows as run_evaluation returned them
    seconds       JSON,                        -- per evaluator, when it was computed
    run_id        VARCHAR,                     -- the run that computed it
    created_at    TIMESTAMP DEFAULT current_timestamp
);
