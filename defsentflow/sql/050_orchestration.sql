-- Stage cache records: the Prefect cache key of a completed stage and the reference it returned.
-- A key whose referenced files are gone is treated as a miss (see tasks/caching.py).
CREATE TABLE IF NOT EXISTS stage_cache (
    cache_key   VARCHAR PRIMARY KEY,
    task        VARCHAR NOT NULL,
    ref         JSON,
    run_id      VARCHAR,
    created_at  TIMESTAMP DEFAULT current_timestamp
);
