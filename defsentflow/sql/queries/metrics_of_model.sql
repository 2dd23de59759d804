-- Every metric recorded for one model ($model_id), including per-subset and 'mean' settings.
SELECT task, setting, metric, pooling, round(value, 4) AS value, n, run_id, created_at
FROM metrics
WHERE model_id = $model_id
ORDER BY task, setting, metric, pooling;
