-- The claims table (defsentflow/claims/): one row per claim per claims run, and the `claims` view.
-- Idempotent: applied on every open. runs comes from 001_core.sql (a claims run is a runs row
-- with flow = 'claims'; its arms are sweep points, sql/060_sweeps.sql).
CREATE TABLE IF NOT EXISTS claim_results (
    claims_run_id VARCHAR NOT NULL,            -- runs.run_id of the claims run
    name          VARCHAR NOT NULL,            -- the claims file's name (= its sweep of arms)
    position      INTEGER,                     -- order in the claims file
    claim         VARCHAR NOT NULL,            -- defsent_plus_beats_defsent, more_entries_help, ...
    statement     VARCHAR,
    paper         VARCHAR,                     -- the paper's figure or direction, with its source
    metric        VARCHAR,                     -- what is measured here
    series        JSON,                        -- [{label, seeds, values, mean, sd, n}] in the paper's increasing order
    measured      VARCHAR,                     -- "DefSent 48.10 ± 0.31 vs DefSent+ 50.02 ± 0.20"
    seeds         JSON,                        -- seeds paired between the first and the last series
    n             INTEGER,
    diff_mean     DOUBLE,                      -- last minus first series, paired by seed
    diff_sd       DOUBLE,
    holds         BOOLEAN,                     -- means increase in the paper's order; NULL: not measured
    clear         BOOLEAN,                     -- every neighbouring paired difference > 2 standard errors
    verdict       VARCHAR,                     -- holds | not supported | contradicted | cannot be tested here (reason): 105
    note          VARCHAR,                     -- why not measured, per-step figures, ...
    arms          JSON,                        -- arm name -> pipeline run id
    seconds       DOUBLE,                      -- wall time of the arm runs this claim reads (shared arms counted in full)
    created_at    TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (claims_run_id, claim)
);

-- Every claim row with its claims run (status, wall time); latest marks the newest row of each
-- claim per claims file, so `SELECT * FROM claims WHERE latest` is the current table.
CREATE OR REPLACE VIEW claims AS
SELECT
    c.name,
    c.claims_run_id,
    c.position,
    c.claim,
    c.statement,
    c.paper,
    c.measured,
    c.n,
    c.diff_mean,
    c.diff_sd,
    c.holds,
    c.clear,
    c.verdict,
    c.metric,
    c.note,
    c.seconds,
    r.status AS run_status,
    r.started_at,
    r.ended_at,
    date_diff('millisecond', r.started_at, r.ended_at) / 1000.0 AS run_seconds,
    c.series,
    c.seeds,
    c.arms,
    row_number() OVER (PARTITION BY c.name, c.claim ORDER BY c.created_at DESC, c.claims_run_id DESC) = 1 AS latest
FROM claim_results AS c
LEFT JOIN runs AS r ON r.run_id = c.claims_run_id;
