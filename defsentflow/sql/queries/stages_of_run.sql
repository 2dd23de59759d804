-- The stages of one run ($run_id) in order: computed or taken from the cache, and how long.
SELECT stage, status, cache_key, started_at, round(seconds, 2) AS seconds, note
FROM stages
WHERE run_id = $run_id
ORDER BY started_at, stage;
