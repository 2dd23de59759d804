-- Dictionary datasets: definitions, usage examples, quarantined input, ingest accounting.
-- Idempotent: applied on every open. The rows of a dataset are replaced as a whole, in the same
-- transaction that registers its artifact (defsentflow/dictionary/store.py).

-- One row per dataset name: the artifact it currently points to and its counts.
CREATE TABLE IF NOT EXISTS dictionaries (
    name          VARCHAR PRIMARY KEY,
    variant       VARCHAR NOT NULL,            -- a (union) | b (one source) | c (whole-token entries)
    artifact_key  VARCHAR NOT NULL,
    sources       JSON,                        -- [{name, kind, paths, read, accepted, ...}]
    tokenizer     VARCHAR,                     -- variant c only
    seed          BIGINT NOT NULL,
    case_fold     BOOLEAN NOT NULL,
    entries       BIGINT NOT NULL,
    definitions   BIGINT NOT NULL,
    examples      BIGINT NOT NULL,
    quarantined   BIGINT NOT NULL,
    train         BIGINT NOT NULL,             -- definitions per split
    dev           BIGINT NOT NULL,
    test          BIGINT NOT NULL,
    updated_at    TIMESTAMP DEFAULT current_timestamp
);

-- Every definition of every dataset; `duckdb catalog.duckdb "SELECT split, count(*) FROM definitions GROUP BY 1"`.
CREATE TABLE IF NOT EXISTS definitions (
    dataset       VARCHAR NOT NULL,
    def_id        BIGINT NOT NULL,             -- row of definitions.parquet in the dataset's artifact
    entry         VARCHAR NOT NULL,
    definition    VARCHAR NOT NULL,
    split         VARCHAR NOT NULL,            -- train | dev | test, by a hash of (seed, entry)
    pos           VARCHAR,
    synset        VARCHAR,
    sources       VARCHAR[] NOT NULL,
    meta          JSON
);

CREATE TABLE IF NOT EXISTS examples (
    dataset       VARCHAR NOT NULL,
    def_id        BIGINT NOT NULL,
    entry         VARCHAR NOT NULL,
    example       VARCHAR NOT NULL,
    split         VARCHAR NOT NULL
);

-- Shared with the corpus stage (020_corpora.sql creates the same table if it runs first).
CREATE TABLE IF NOT EXISTS quarantine (dataset VARCHAR, source VARCHAR, file VARCHAR, line BIGINT, reason VARCHAR, raw VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp);
ALTER TABLE quarantine ADD COLUMN IF NOT EXISTS detail VARCHAR;

-- One row per ingest that wrote the catalog; read = accepted + duplicates + excluded + quarantined.
CREATE TABLE IF NOT EXISTS ingest_summaries (
    dataset               VARCHAR NOT NULL,
    artifact_key          VARCHAR NOT NULL,
    status                VARCHAR NOT NULL,    -- built | registered (artifact existed, rows reloaded)
    read                  BIGINT NOT NULL,
    accepted              BIGINT NOT NULL,
    duplicates            BIGINT NOT NULL,
    excluded              BIGINT NOT NULL,     -- dropped by the variant's entry filter (c)
    quarantined           BIGINT NOT NULL,
    examples_quarantined  BIGINT NOT NULL,
    entries               BIGINT NOT NULL,
    definitions           BIGINT NOT NULL,
    examples              BIGINT NOT NULL,
    sources               JSON,
    reasons               JSON,
    seconds               DOUBLE,
    created_at            TIMESTAMP DEFAULT current_timestamp,
    CHECK (read = accepted + duplicates + excluded + quarantined)
);
