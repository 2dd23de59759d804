-- Harvested pair sets: one row per pairs artifact (kind 'pairs'), with the label distribution.
CREATE TABLE IF NOT EXISTS harvest_stats (
    artifact_key    VARCHAR PRIMARY KEY,       -- artifacts.artifact_key of the pairs Parquet
    run_id          VARCHAR,
    corpus          VARCHAR,                   -- corpus name
    corpus_key      VARCHAR,
    scorer_version  VARCHAR,
    n_pairs         BIGINT NOT NULL,
    n_neighbour     BIGINT,
    n_random        BIGINT,
    n_batches       INTEGER,
    context_set_size INTEGER,
    mean            DOUBLE,
    std             DOUBLE,
    quantiles       JSON,                      -- {"q00": min, "q05": ..., "q50": median, ..., "q100": max}
    histogram       JSON,                      -- {"edges": [...], "counts": [...]}
    seconds         DOUBLE,
    created_at      TIMESTAMP DEFAULT current_timestamp
);
