-- Progressive Separate Training: one row per candidate per step, and one row per PST run.
-- 040_evaluation.sql's views read pst_steps.
CREATE TABLE IF NOT EXISTS pst_steps (
    run_id            VARCHAR,
    step              INTEGER,                 -- 0 = the untrained encoder
    seed              INTEGER,
    model_id          VARCHAR,
    selection_metric  VARCHAR,                 -- stsb-dev | revdict-mrr
    selection_score   DOUBLE,
    chosen            BOOLEAN,                 -- the best candidate of its step
    entry_matrix_path VARCHAR,
    lr                DOUBLE,
    pooling           VARCHAR,
    entry_encoding    VARCHAR,                 -- ac | amp
    use_pooler        BOOLEAN,
    note              VARCHAR,
    created_at        TIMESTAMP DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS pst_runs (
    run_id            VARCHAR PRIMARY KEY,
    base_model        VARCHAR,
    dictionary        VARCHAR,
    steps_run         INTEGER,                 -- the last step trained
    winner_step       INTEGER,                 -- 0 when no trained encoder beat the untrained one
    winner_model_id   VARCHAR,
    model_id          VARCHAR,                 -- pst-<run_id>, the chosen encoder in `models`
    selection_metric  VARCHAR,
    selection_score   DOUBLE,
    reason            VARCHAR,                 -- which step won and why
    note              VARCHAR,                 -- selection fallback, auto-stop reason
    record_path       VARCHAR,
    seconds           DOUBLE,
    created_at        TIMESTAMP DEFAULT current_timestamp
);
