-- DefSent+ Table 2's statistic: per PST run, step (1st, 2nd, 3rd, 3rd-ICA) and pooling, each figure's
-- mean ± sd over the seeds of the chosen combination (step 1's chosen pooling and entry encoding,
-- which later steps keep), as eval.seed_stats evaluates them (defsentflow/pipeline.py). The
-- leaderboard shows each group as one row (100_leaderboard.sql), the run report as Table 2.
-- Idempotent: applied when changed. Reads pst_steps (030, 080), metrics (001) and the registry macros (039).

CREATE OR REPLACE VIEW pst_seed_models AS
WITH combo AS (
    SELECT run_id, any_value(pooling) AS pooling, any_value(entry_encoding) AS entry_encoding
    FROM pst_steps WHERE step = 1 AND chosen GROUP BY run_id
)
SELECT s.run_id, s.step, coalesce(s.ica, FALSE) AS ica,
       CASE s.step WHEN 1 THEN '1st' WHEN 2 THEN '2nd' WHEN 3 THEN '3rd' ELSE s.step::VARCHAR || 'th' END
           || CASE WHEN coalesce(s.ica, FALSE) THEN '-ICA' ELSE '' END AS step_label,
       s.seed, s.model_id
FROM pst_steps AS s
JOIN combo AS c ON c.run_id = s.run_id AND s.pooling = c.pooling AND s.entry_encoding IS NOT DISTINCT FROM c.entry_encoding
WHERE s.step >= 1
QUALIFY row_number() OVER (PARTITION BY s.run_id, s.step, coalesce(s.ica, FALSE), s.seed ORDER BY s.created_at DESC) = 1;

CREATE OR REPLACE VIEW seed_stats AS
WITH latest AS (      -- each seed model's newest headline figures (its family's main metric), per pooling
    SELECT x.* FROM metrics AS x
    WHERE x.model_id IN (SELECT model_id FROM pst_seed_models) AND NOT contains(x.task, '/')
      AND is_headline(x.task, x.setting, x.metric)
    QUALIFY row_number() OVER (PARTITION BY x.model_id, coalesce(x.pooling, ''), x.task, x.setting, x.metric
                               ORDER BY x.created_at DESC) = 1
), per_seed AS (
    SELECT g.run_id, g.step, g.ica, g.step_label, g.seed, l.pooling, l.task, l.setting, l.metric, l.value
    FROM pst_seed_models AS g JOIN latest AS l USING (model_id)
    UNION ALL BY NAME   -- each seed's STS average over the registry's seven tasks (empty unless it has
                        -- all seven: Table 2's "Avg."), then its mean over seeds; and how many it has (metric n)
    SELECT g.run_id, g.step, g.ica, g.step_label, g.seed, l.pooling,
           concat_ws('+', average_task(), task_variant(l.task)) AS task, 'all' AS setting,
           unnest(['spearman', 'n']) AS metric,
           unnest([CASE WHEN count(*) = sts_average_size() THEN avg(l.value) END, count(*)::DOUBLE]) AS value
    FROM pst_seed_models AS g JOIN latest AS l USING (model_id)
    WHERE in_sts_average(l.task) AND l.metric = 'spearman' AND l.setting = 'all'
    GROUP BY g.run_id, g.step, g.ica, g.step_label, g.seed, l.pooling, task_variant(l.task)
)
-- The average over seeds is empty unless every seed has all seven tasks (issue 57: a seed missing one used
-- to leave the other seeds' mean under n = 3); its count (metric n) is the fewest tasks any seed has.
SELECT run_id, step, ica, step_label, pooling, task, setting, metric,
       CASE WHEN metric = 'n' THEN min(value) WHEN count(value) = count(*) THEN avg(value) END AS mean,
       CASE WHEN count(value) = count(*) THEN stddev_samp(value) END AS sd, count(*) AS n,
       list(seed ORDER BY seed) AS seeds
FROM per_seed
GROUP BY run_id, step, ica, step_label, pooling, task, setting, metric;
