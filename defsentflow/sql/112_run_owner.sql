-- The process that keeps a run 'running' (defsentflow/storage/runs.py): a run whose process on
-- this host is gone is closed as 'interrupted' wherever runs are listed (runs, /runs, sql).
-- Status values: running | completed | failed | interrupted | stopped | unchanged; a failed or
-- interrupted run's note is its one-line reason.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS host VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS pid INTEGER;
