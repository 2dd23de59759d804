-- The evaluation tasks one run ($run_id) asked for: evaluated, fallback (evaluated on another split,
-- filed under evaluated_as) or skipped, with the reason. Table: run_tasks (sql/096_run_tasks.sql).
SELECT task, status, evaluated_as, coalesce(reason, '') AS reason
FROM run_tasks
WHERE run_id = $run_id
ORDER BY status = 'skipped', task;
