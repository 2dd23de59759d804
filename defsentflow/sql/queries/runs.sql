-- Recent runs with their stage counts (newest first).
SELECT r.run_id, r.flow, r.status, r.started_at, r.ended_at,
       round(epoch(r.ended_at - r.started_at), 1) AS seconds,
       count(s.stage) AS stages,
       count(s.stage) FILTER (WHERE s.status = 'cached') AS cached,
       count(s.stage) FILTER (WHERE s.status = 'failed') AS failed,
       r.note
FROM runs AS r
LEFT JOIN stages AS s USING (run_id)
GROUP BY ALL
ORDER BY r.started_at DESC
LIMIT 50;
