-- Corpora (documents -> paragraphs -> sentences -> chunks) and their quarantined input.
-- Idempotent: applied on every open.

-- Same definition as in 010_dictionaries.sql, so whichever file runs first creates it.
CREATE TABLE IF NOT EXISTS quarantine (dataset VARCHAR, source VARCHAR, file VARCHAR, line BIGINT, reason VARCHAR, raw VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp);

-- One row per ingested corpus artifact. documents_read = documents + quarantined (rejected files or
-- records); repaired counts lines kept after decoding with replacement (also in quarantine).
CREATE TABLE IF NOT EXISTS corpora (
    name            VARCHAR NOT NULL,
    artifact_key    VARCHAR PRIMARY KEY,
    documents       BIGINT NOT NULL,
    paragraphs      BIGINT NOT NULL,
    sentences       BIGINT NOT NULL,
    chunks          BIGINT NOT NULL,
    quarantined     BIGINT NOT NULL,
    documents_read  BIGINT NOT NULL,
    repaired        BIGINT NOT NULL DEFAULT 0,
    sources         JSON,
    created_at      TIMESTAMP DEFAULT current_timestamp,
    CHECK (documents_read = documents + quarantined)
);

-- The newest artifact of each corpus name.
CREATE OR REPLACE VIEW latest_corpora AS
SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY name ORDER BY created_at DESC) AS rn FROM corpora
) WHERE rn = 1;
