-- The claims' stated test (defsentflow/claims/judge.py): the effect (mean paired difference, last
-- minus first arm), its two-sided 90% t interval (lower end = the one-sided 95% bound) and the
-- one-sided paired t-test's p and that p Holm-adjusted over the claims of the run (p_holm), beside the
-- verdict (holds | not supported | contradicted | cannot be tested here (reason)).
-- claim_results.clear now means p < 0.05 (the stated test, unadjusted), no longer "every difference > 2 standard errors".
-- Idempotent: applied on every open, after 085_claims.sql, whose view this one replaces.
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS ci_low DOUBLE;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS ci_high DOUBLE;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS p DOUBLE;
ALTER TABLE claim_results ADD COLUMN IF NOT EXISTS p_holm DOUBLE;

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
    row_number() OVER (PARTITION BY c.name, c.claim ORDER BY c.created_at DESC, c.claims_run_id DESC) = 1 AS latest
FROM claim_results AS c
LEFT JOIN runs AS r ON r.run_id = c.claims_run_id;
