-- One model, one row: which catalog ids and names stand for the same model. Its headline scores in
-- long form (model_scores) and the leaderboard are in 100_leaderboard.sql.
-- Idempotent: applied on every open. models and metrics come from 001_core.sql.

-- Names that are not a model's id (defsentflow/model/ids.py): PST's choice of a run, pst-<run id>
-- (kind 'run'), names the model it chose; the model's id is its content id. Written with the models
-- row (storage/records.py, write_model_row) and mirrored to the model's row record.
CREATE TABLE IF NOT EXISTS model_names (
    name        VARCHAR PRIMARY KEY,
    model_id    VARCHAR NOT NULL,
    kind        VARCHAR NOT NULL,                -- run
    run_id      VARCHAR,
    created_at  TIMESTAMP DEFAULT current_timestamp
);

-- Every id a model is known by, one row each, with the model it names (display_id): a models row,
-- an id metrics were filed under (ids whose models rows share a directory are one model: a
-- catalog written before stable ids filed pst-<run> beside dsp-<key>), a name of model_names, and an
-- alias's holder (alias_holders, 044: demo@champion).
-- display_id: a model's own id before a name, then an id with scores, before a run-scoped row
-- (method 'pst', older catalogs), newest first.
CREATE OR REPLACE VIEW model_ids AS
WITH ids AS (
    SELECT model_id AS id, model_id FROM models
    UNION
    SELECT DISTINCT x.model_id, coalesce(n.model_id, x.model_id) FROM metrics AS x
    LEFT JOIN model_names AS n ON n.name = x.model_id
    UNION
    SELECT name, model_id FROM model_names
    UNION
    SELECT alias, model_id FROM alias_holders
), keyed AS (
    SELECT i.id AS model_id, m.method, m.run_id, m.path, m.created_at, i.id <> i.model_id AS is_name,
           coalesce(m.path, 'id:' || i.model_id) AS model_key,
           EXISTS (SELECT 1 FROM metrics AS x WHERE x.model_id = i.id) AS has_scores
    FROM ids AS i
    LEFT JOIN models AS m ON m.model_id = i.model_id
)
SELECT
    model_id,
    model_key,
    first_value(model_id) OVER (PARTITION BY model_key ORDER BY is_name, has_scores DESC,
                                coalesce(method = 'pst', FALSE), created_at DESC NULLS LAST, model_id) AS display_id,
    list_sort(list(model_id) OVER (PARTITION BY model_key)) AS aliases,
    method,
    path,
    is_name
FROM keyed;

-- One row per model: its display id, every id and name it is known by, its method and folder.
CREATE OR REPLACE VIEW model_aliases AS
SELECT display_id, any_value(aliases) AS aliases,
       coalesce(max(method) FILTER (WHERE model_id = display_id), max(method)) AS method,
       coalesce(max(path) FILTER (WHERE model_id = display_id), max(path)) AS path
FROM model_ids
GROUP BY display_id;
