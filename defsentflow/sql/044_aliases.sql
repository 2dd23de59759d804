-- Aliases (defsentflow/registry/): a per-config name, CONFIG@LABEL (demo@champion), that stands for one
-- model; every command that takes a model id takes it (model_ids, 045, lists the holder's). Its history is
-- the table: one row per change (the promotion gate after a run, `defsentflow promote`, `rollback`), never
-- updated or deleted; the holder is the newest row. Mirrored to the alias's row record (records/aliases/),
-- restored by `catalog rebuild`. Idempotent: applied on every open.
CREATE TABLE IF NOT EXISTS alias_changes (
    alias       VARCHAR NOT NULL,
    seq         INTEGER NOT NULL,               -- 1, 2, ... per alias
    model_id    VARCHAR NOT NULL,               -- the holder from this change on
    from_model  VARCHAR,                        -- the holder before it (NULL: the first)
    action      VARCHAR NOT NULL,               -- gate | promote | rollback | retire
    who         VARCHAR NOT NULL,               -- user@host
    run_id      VARCHAR,                        -- the pipeline run whose gate made it
    figure      VARCHAR,                        -- the figure that decided (its registry name)
    value       DOUBLE,                         -- model_id's figure
    from_value  DOUBLE,                         -- from_model's figure (NULL: none under that name)
    note        VARCHAR,                        -- the decision in words
    changed_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (alias, seq)
);

-- Each alias's holder now and since when (its newest change); a retired alias (its newest change a
-- `retire`, `defsentflow aliases --retire`) names nothing.
CREATE OR REPLACE VIEW alias_holders AS
SELECT * FROM (
    SELECT alias, model_id, changed_at AS since, action, who, run_id, figure, value, seq AS changes
    FROM alias_changes
    QUALIFY row_number() OVER (PARTITION BY alias ORDER BY seq DESC) = 1
) WHERE action <> 'retire';

-- The promotion gate's decision on a pipeline run (promoted | kept | not-comparable | unchanged) and
-- its sentence with both figures.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS promotion VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS promotion_note VARCHAR;
-- why, in a word or three: better | first model | worse | tied | within min_delta | re-run of the
-- champion | rolled back | no figure (registry/gate.py, Promotion.why)
ALTER TABLE runs ADD COLUMN IF NOT EXISTS promotion_why VARCHAR;
