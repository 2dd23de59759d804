-- The leaderboard for the DuckDB shell: one row per model (the ids of one model directory merged,
-- see model_aliases) and pooling, one column per headline score some model has (STS Spearman x 100,
-- reverse-dictionary MRR per mode, ...; see model_scores). `defsentflow leaderboard` shows the same
-- rows with the 7-task STS average, ranked by the newest PST run's selection figure (a dev score).
PIVOT (SELECT model_id, pooling, "column", value FROM model_scores)
ON "column" USING first(value)
ORDER BY model_id, pooling;
