-- One leaderboard: the naming scheme of every figure, the headline scores in long form, and a
-- placeholder `leaderboard` view. defsentflow/storage/leaderboard_view.py writes the real
-- `leaderboard` view (one column per figure some model has) whenever metrics are recorded; the
-- CLI, the web page and the report run the same SELECT. Idempotent: applied when changed.

-- <family>_<split>[_<protocol>][_<mode>]_<metric>, as defsentflow/eval_tasks.py:metric_column
-- (tests/storage/test_leaderboard_view.py compares the two): 'sts12_test_spearman',
-- 'stsb_dev_spearman', 'revdict_dev_unseen_hybrid_mrr', 'revdict_test_papers_cosine_mrr'.
CREATE OR REPLACE MACRO task_split(task) AS
    coalesce(list_filter(string_split(task, '-')[2:], lambda w: w IN ('train', 'dev', 'trial', 'test'))[1], 'test');
CREATE OR REPLACE MACRO task_protocol(task) AS
    coalesce(nullif(array_to_string(list_filter(string_split(task, '-')[2:],
                                                lambda w: w NOT IN ('train', 'dev', 'trial', 'test')), '-'), ''),
             CASE WHEN split_part(task, '-', 1) IN ('revdict', 'wordpred') THEN 'unseen' END);
CREATE OR REPLACE MACRO metric_column(task, setting, metric) AS
    regexp_replace(concat_ws('_', split_part(task, '-', 1), task_split(task), task_protocol(task),
                             CASE WHEN setting = 'all' THEN NULL ELSE setting END, metric),
                   '[^A-Za-z0-9]+', '_', 'g');
-- dev: what a selection may read; train; everything else is a reported (test) figure
CREATE OR REPLACE MACRO split_group(task) AS
    CASE WHEN task_split(task) IN ('dev', 'train') THEN task_split(task) ELSE 'test' END;

-- Headline scores, one row per (model, pooling, figure): the newest value over all of the model's
-- ids (model_aliases, 045). A task's headline metric is Spearman ('all' setting) for STS tasks,
-- MRR (every mode) for dictionary tasks, else each metric; per-subset rows and STS's 'mean'
-- setting stay out. Two more figures per model: sts7_test_spearman, the mean over the seven
-- tasks of the STS average that it has (eval_tasks.AVERAGE_TASKS), and sts7_test_n, how many.
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
), scores AS (
    SELECT display_id AS model_id, aliases, pooling, task, setting, metric,
           metric_column(task, setting, metric) AS "column", split_group(task) AS split,
           value, n, run_id, created_at
    FROM headline
), average AS (
    SELECT model_id, any_value(aliases) AS aliases, pooling, avg(value) AS value, count(*) AS n,
           max(created_at) AS created_at
    FROM scores
    WHERE task IN ('sts12', 'sts13', 'sts14', 'sts15', 'sts16', 'stsb-test', 'sickr') AND metric = 'spearman'
    GROUP BY model_id, pooling
)
SELECT * FROM scores
UNION ALL BY NAME
SELECT model_id, aliases, pooling, 'sts7' AS task, 'all' AS setting, 'spearman' AS metric,
       metric_column('sts7', 'all', 'spearman') AS "column", 'test' AS split, value, n, NULL AS run_id, created_at FROM average
UNION ALL BY NAME
SELECT model_id, aliases, pooling, 'sts7' AS task, 'all' AS setting, 'n' AS metric,
       metric_column('sts7', 'all', 'n') AS "column", 'test' AS split, n AS value, n, NULL AS run_id, created_at FROM average;

-- Until a metric is recorded: one row per model, no score column.
CREATE OR REPLACE VIEW leaderboard AS
SELECT display_id AS model_id, CAST(NULL AS VARCHAR) AS pooling, any_value(method) AS method,
       CAST(NULL AS VARCHAR) AS run_id,
       array_to_string(list_filter(any_value(aliases), lambda a: a <> display_id), ', ') AS also_known_as
FROM model_aliases GROUP BY display_id ORDER BY model_id;
