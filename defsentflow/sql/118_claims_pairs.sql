-- The claims judged on every adjacent pair (defsentflow/claims/judge.py, issue 42): pairs holds each
-- pair's test ([{lower, higher, effect, ci_low, ci_high, p, p_down, p_holm, p_down_holm, n, verdict}]; the
-- row's effect, interval and p are its deciding pair's); verdict now carries its scope ("holds on this
-- control"), scope alone; departures lists how the control departs from the paper (claims/papers.py).
-- Idempotent: applied on every open, after 105_claims_test.sql, whose view this one replaces.
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS pairs JSON;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS scope VARCHAR;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS departures JSON;

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
    c.diff_mean AS effect,
    c.ci_low,
    c.ci_high,
    c.p,
    c.p_holm,
    c.verdict,
    c.diff_mean,
    c.diff_sd,
    c.holds,
    c.clear,
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
    c.pairs,
    c.scope,
    c.departures,
    row_number() OVER (PARTITION BY c.name, c.claim ORDER BY c.created_at DESC, c.claims_run_id DESC) = 1 AS latest
FROM claim_results AS c
LEFT JOIN runs AS r ON r.run_id = c.claims_run_id;
