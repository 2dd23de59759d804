-- Reverse-dictionary protocols (defsentflow.evaluation.revdict): beside each figure, how many
-- queries were used (metrics.n) and how many were left out because the model trained on their
-- text (n_excluded; NULL for metrics without such a filter). Idempotent: applied on every open.
ALTER TABLE metrics ADD COLUMN IF NOT EXISTS n_excluded BIGINT;
