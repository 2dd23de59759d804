-- PST per Eq. 11 of DefSent+ (defsentflow.training.pst): a candidate trained against the
-- ICA-transformed entry matrix is marked (ica), and each row says by which rule its step chose
-- (selection_rule: best_seed | mean_over_seeds) and the mean over seeds of its combination
-- (group_mean: pooling, entry encoding, ICA). pst_runs records the rule, the training entries and the
-- leaderboard column of its selection figure (selection_column, as the task registry names it).
-- Idempotent: applied on every open.
ALTER TABLE pst_steps ADD COLUMN IF NOT EXISTS ica BOOLEAN DEFAULT false;
ALTER TABLE pst_steps ADD COLUMN IF NOT EXISTS selection_rule VARCHAR;
ALTER TABLE pst_steps ADD COLUMN IF NOT EXISTS group_mean DOUBLE;
ALTER TABLE pst_runs ADD COLUMN IF NOT EXISTS selection_rule VARCHAR;
ALTER TABLE pst_runs ADD COLUMN IF NOT EXISTS train_entries VARCHAR;
ALTER TABLE pst_runs ADD COLUMN IF NOT EXISTS selection_column VARCHAR;
