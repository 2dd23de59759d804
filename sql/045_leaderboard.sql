-- One model, one row: which catalog ids name the same model, and its headline scores in long
-- form. `defsentflow leaderboard` pivots model_scores into one column per task present
-- (sql/queries/leaderboard.sql), so a new task or protocol needs no new column here.
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

-- Headline scores, one row per (model, pooling, score): the newest value over all of the model's
-- ids. A task's headline metric is Spearman ('all' setting) for STS tasks, MRR (every mode) for
-- reverse-dictionary tasks, else each of its metrics; per-subset rows (task 'sts12/MSRpar') and
-- the 'mean' setting stay out. column: the task, then the setting unless 'all', then the metric
-- unless 'spearman' ('stsb_dev', 'revdict_head_mrr', 'revdict_dev_cosine_mrr'); split: dev for
-- tasks named *-dev or *-dev-<protocol> (what a selection may read), train likewise, else test.
CREATE OR REPLACE VIEW model_scores AS
WITH tagged AS (
    SELECT a.display_id, a.aliases, x.*,
           bool_or(x.metric = 'spearman') OVER (PARTITION BY x.task) AS task_has_spearman,
           bool_or(x.metric = 'mrr') OVER (PARTITION BY x.task) AS task_has_mrr
    FROM metrics AS x
    JOIN model_aliases AS a USING (model_id)
    WHERE NOT contains(x.task, '/') AND x.setting <> 'mean'
), headline AS (
    SELECT * FROM tagged
    WHERE CASE WHEN task_has_spearman THEN metric = 'spearman' AND setting = 'all'
               WHEN task_has_mrr THEN metric = 'mrr'
               ELSE TRUE END
    QUALIFY row_number() OVER (PARTITION BY display_id, coalesce(pooling, ''), task, setting, metric
                               ORDER BY created_at DESC) = 1
)
SELECT
    display_id AS model_id,
    aliases,
    pooling,
    task,
    setting,
    metric,
    regexp_replace(task || CASE WHEN setting = 'all' THEN '' ELSE '_' || setting END
                        || CASE WHEN metric = 'spearman' THEN '' ELSE '_' || metric END, '[^A-Za-z0-9]+', '_', 'g')
        AS "column",
    CASE WHEN ends_with(task, '-dev') OR contains(task, '-dev-') THEN 'dev'
         WHEN ends_with(task, '-train') OR contains(task, '-train-') THEN 'train'
         ELSE 'test' END AS split,
    value,
    n,
    run_id,
    created_at
FROM headline;
