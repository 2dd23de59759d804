-- One model, one row: which catalog ids name the same model. Its headline scores in long form
-- (model_scores) and the leaderboard are in 100_leaderboard.sql.
-- Idempotent: applied on every open. models and metrics come from 001_core.sql.

-- Every id a model is known by (models rows, and ids metrics were filed under) with the model it
-- names: ids whose models rows share a directory are one model (PST's pst-<run> and the dsp-<key>
-- it selected; a base encoder's base-<hash> and the id its baseline scores are filed under).
-- display_id: the run's choice (pst-<run>) first, then an id with scores, then any but PST's
-- hash-named step-0 record (base-<hash>), newest first.
CREATE OR REPLACE VIEW model_aliases AS
WITH ids AS (
    SELECT model_id FROM models UNION SELECT DISTINCT model_id FROM metrics
), keyed AS (
    SELECT i.model_id, m.method, m.run_id, m.path, m.created_at,
           coalesce(m.path, 'id:' || i.model_id) AS model_key,
           EXISTS (SELECT 1 FROM metrics AS x WHERE x.model_id = i.model_id) AS has_scores
    FROM ids AS i
    LEFT JOIN models AS m USING (model_id)
)
SELECT
    model_id,
    model_key,
    first_value(model_id) OVER (PARTITION BY model_key ORDER BY coalesce(method = 'pst', FALSE) DESC, has_scores DESC,
                                coalesce(method = 'base', FALSE), created_at DESC NULLS LAST, model_id) AS display_id,
    list_sort(list(model_id) OVER (PARTITION BY model_key)) AS aliases,
    method,
    path
FROM keyed;
