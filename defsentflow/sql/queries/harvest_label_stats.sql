-- Harvested pair sets and their label distributions (newest first).
SELECT artifact_key, run_id, corpus, n_pairs, n_neighbour, n_random, round(mean, 4) AS mean,
       round(std, 4) AS std, quantiles, created_at
FROM harvest_stats
ORDER BY created_at DESC;
