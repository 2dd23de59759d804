-- Core lineage tables: runs, stages, artifacts, models, metrics. Idempotent: applied on every open.
CREATE TABLE IF NOT EXISTS runs (
    run_id        VARCHAR PRIMARY KEY,
    flow          VARCHAR NOT NULL,
    config        JSON,
    config_hash   VARCHAR,
    code_version  VARCHAR,
    started_at    TIMESTAMP DEFAULT current_timestamp,
    ended_at      TIMESTAMP,
    status        VARCHAR DEFAULT 'running',   -- running | completed | failed | unchanged
    note          VARCHAR
);

CREATE TABLE IF NOT EXISTS stages (
    run_id        VARCHAR NOT NULL,
    stage         VARCHAR NOT NULL,
    cache_key     VARCHAR,
    status        VARCHAR NOT NULL,            -- running | completed | cached | failed
    started_at    TIMESTAMP DEFAULT current_timestamp,
    ended_at      TIMESTAMP,
    seconds       DOUBLE,
    note          VARCHAR
);

CREATE TABLE IF NOT EXISTS artifacts (
    artifact_key  VARCHAR PRIMARY KEY,         -- content-addressed: inputs + config + code version
    kind          VARCHAR NOT NULL,            -- dictionary | corpus | index | scorer | pairs | model | entry_matrix | report ...
    name          VARCHAR,
    path          VARCHAR NOT NULL,
    content_hash  VARCHAR NOT NULL,
    input_hashes  JSON,
    config        JSON,
    code_version  VARCHAR,
    run_id        VARCHAR,
    meta          JSON,
    created_at    TIMESTAMP DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS models (
    model_id      VARCHAR PRIMARY KEY,
    path          VARCHAR NOT NULL,
    base_model    VARCHAR,
    method        VARCHAR,                     -- base | defsent | defsent_plus | surrogate | pretrain | pst
    pooling       VARCHAR,
    run_id        VARCHAR,
    artifact_key  VARCHAR,
    meta          JSON,
    created_at    TIMESTAMP DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS metrics (
    model_id      VARCHAR NOT NULL,
    task          VARCHAR NOT NULL,            -- sts12 .. sts16, stsb-dev, sickr, revdict, ...
    setting       VARCHAR NOT NULL,            -- all | mean | cosine | head | ...
    metric        VARCHAR NOT NULL,            -- spearman | mrr | top1 | top3 | top10 | ...
    value         DOUBLE NOT NULL,
    n             BIGINT,
    pooling       VARCHAR,
    run_id        VARCHAR,
    created_at    TIMESTAMP DEFAULT current_timestamp
);
