-- One leaderboard: the naming scheme of every figure, the headline scores in long form, and a
-- placeholder `leaderboard` view. defsentflow/storage/leaderboard_view.py writes the real
-- `leaderboard` view (one column per figure some model has) whenever metrics are recorded; the
-- CLI, the web page and the report run the same SELECT. Idempotent: applied when changed.

-- The figure-naming macros (task_base, task_variant, task_family, task_split, task_protocol,
-- metric_column, split_group), the registry's is_headline, in_sts_average and average_task, and the
-- table eval_task_registry are generated from the task registry, defsentflow/eval_tasks.py
-- (registry_ddl), and applied before this file as 039_eval_tasks.sql:
-- 'sts12_test_spearman', 'stsb_dev_spearman', 'revdict_dev_unseen_hybrid_mrr',
-- 'revdict_test_unseen_q500_splitcands_cosine_mrr' (tests/evaluation/test_leaderboard.py compares them).

-- Headline scores, one row per (model, pooling, figure): the newest value over all of the model's
-- ids (model_ids, 045). A task's headline metric is its family's main metric and setting in the
-- registry (Spearman, 'all' setting, for STS; MRR in every mode for dictionary tasks); a family the
-- registry does not know keeps each metric. Per-subset rows and STS's 'mean' setting stay out. Two
-- more figures per model and variant: the mean over the registry's seven STS-average tasks
-- (sts7_test_spearman, or sts7_test_<variant>_spearman), empty unless the model has all seven (an
-- average of five is not the seven-task figure), and how many of them it has (sts7_test_n).
CREATE OR REPLACE VIEW model_scores AS
WITH headline AS (
    SELECT a.display_id, a.aliases, x.*
    FROM metrics AS x
    JOIN model_ids AS a USING (model_id)
    WHERE NOT contains(x.task, '/') AND x.setting <> 'mean' AND is_headline(x.task, x.setting, x.metric)
    QUALIFY row_number() OVER (PARTITION BY display_id, coalesce(pooling, ''), task, setting, metric
                               ORDER BY created_at DESC) = 1
), scores AS (
    SELECT display_id AS model_id, aliases, pooling, task, setting, metric,
           metric_column(task, setting, metric) AS "column", split_group(task) AS split,
           value, n, run_id, created_at
    FROM headline
), average AS (
    SELECT model_id, any_value(aliases) AS aliases, pooling,
           concat_ws('+', average_task(), task_variant(task)) AS task,
           CASE WHEN count(*) = sts_average_size() THEN avg(value) END AS value, count(*) AS n,
           max(created_at) AS created_at
    FROM scores
    WHERE in_sts_average(task) AND metric = 'spearman' AND setting = 'all'
    GROUP BY model_id, pooling, task_variant(task)
)
SELECT * FROM scores
UNION ALL BY NAME
SELECT model_id, aliases, pooling, task, 'all' AS setting, metric, metric_column(task, 'all', metric) AS "column",
       'test' AS split, value, n, NULL AS run_id, created_at
FROM (SELECT * EXCLUDE (value), unnest(['spearman', 'n']) AS metric, unnest([value, n::DOUBLE]) AS value FROM average);

-- The same shape for the seed statistics of PST runs (seed_stats, 090): one row per run, step and
-- pooling ("pst-<run> 3rd-ICA (mean of 10 seeds)"), its figures means over the seeds and their sample
-- sd in `sd`. The leaderboard adds these rows, with a `<column>_sd` beside each such figure.
CREATE OR REPLACE VIEW seed_scores AS
SELECT coalesce(r.model_id, 'pst-' || s.run_id) || ' ' || s.step_label || ' (mean of '
           || max(s.n) OVER (PARTITION BY s.run_id, s.step_label) || ' seeds)' AS model_id,
       [coalesce(r.model_id, 'pst-' || s.run_id) || ' ' || s.step_label] AS aliases,
       s.pooling, s.task, s.setting, s.metric, metric_column(s.task, s.setting, s.metric) AS "column",
       split_group(s.task) AS split, s.mean AS value, s.sd, s.n, s.run_id, CAST(NULL AS TIMESTAMP) AS created_at
FROM seed_stats AS s LEFT JOIN pst_runs AS r USING (run_id)
WHERE s.n >= 2;

-- Until a metric is recorded: one row per model, no score column.
CREATE OR REPLACE VIEW leaderboard AS
SELECT display_id AS model_id, CAST(NULL AS VARCHAR) AS pooling, any_value(method) AS method,
       CAST(NULL AS VARCHAR) AS run_id,
       array_to_string(list_filter(any_value(aliases), lambda a: a <> display_id), ', ') AS also_known_as
FROM model_ids GROUP BY display_id ORDER BY model_id;
