-- Sweeps (defsentflow/sweep.py): one row per sweep, one per expanded point, and the results view.
-- Idempotent: applied on every open. pst_runs/pst_steps (030), model_headline (040) and runs (001)
-- are created by the earlier files.
CREATE TABLE IF NOT EXISTS sweeps (
    sweep        VARCHAR PRIMARY KEY,
    path         VARCHAR,                      -- the sweep YAML (NULL: given inline)
    base_path    VARCHAR,                      -- the base pipeline config (NULL: inline)
    spec         JSON,                         -- the validated sweep file
    n_points     INTEGER,
    updated_at   TIMESTAMP DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS sweep_points (
    sweep        VARCHAR NOT NULL,
    point_id     VARCHAR NOT NULL,             -- hash of the point's values
    position     INTEGER,                      -- order in the expanded sweep (1-based)
    label        VARCHAR,                      -- "lr=2e-06, use_pooler=no, ..."
    params       JSON,                         -- dotted key -> value
    config_path  VARCHAR,                      -- the point's pipeline config (<data root>/sweeps/<sweep>/<id>.yaml)
    config_hash  VARCHAR,                      -- of the point config (as written) its last run used
    run_id       VARCHAR,                      -- the pipeline run (runs.run_id) of its last attempt
    status       VARCHAR NOT NULL DEFAULT 'pending',  -- pending | running | completed | failed | interrupted
    owner        VARCHAR,                      -- {"pid", "host"} of the process running it
    started_at   TIMESTAMP,
    ended_at     TIMESTAMP,
    seconds      DOUBLE,
    note         VARCHAR,
    PRIMARY KEY (sweep, point_id)
);

-- One row per point: its values and status, PST's choice, and the scores of its best trained
-- candidate (the best over steps >= 1 by the selection metric; evaluated with the run's eval
-- pooling when the config sets eval.best_trained). STS columns: Spearman x 100; revdict: MRR.
CREATE OR REPLACE VIEW sweep_results AS
WITH trained AS (
    SELECT run_id, step, model_id, selection_metric, selection_score
    FROM pst_steps
    WHERE step >= 1 AND chosen
    QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY selection_score DESC NULLS LAST, step) = 1
), untrained AS (
    SELECT run_id, max(selection_score) AS selection_score FROM pst_steps WHERE step = 0 GROUP BY run_id
), hybrid AS (       -- model_headline has head and cosine; hybrid (headword added) is read from metrics
    SELECT model_id, coalesce(pooling, '') AS pooling, arg_max(value, created_at) AS mrr
    FROM metrics WHERE task_base(task) = 'revdict' AND setting = 'hybrid' AND metric = 'mrr'
    GROUP BY ALL
), defsent AS (      -- a point that trains one DefSent(+) model instead of PST: its model, by stage row
    SELECT s.run_id, m.model_id
    FROM stages AS s JOIN models AS m ON m.artifact_key = s.cache_key
    WHERE m.method IN ('defsent', 'defsent_plus')
    QUALIFY row_number() OVER (PARTITION BY s.run_id ORDER BY s.ended_at DESC NULLS LAST) = 1
), wordpred_dev AS (  -- DefSent's selection figure: dev-split word-prediction MRR
    SELECT model_id, arg_max(value, created_at) AS mrr
    FROM metrics WHERE task_base(task) = 'wordpred-dev' AND metric = 'mrr'
    GROUP BY ALL
), dev AS (          -- dev-split reverse dictionary (the figure a choice may read)
    SELECT model_id, coalesce(pooling, '') AS pooling,
           arg_max(value, created_at) FILTER (WHERE setting = 'cosine') AS cosine_mrr,
           arg_max(value, created_at) FILTER (WHERE setting = 'head') AS head_mrr
    FROM metrics WHERE task_base(task) = 'revdict-dev' AND metric = 'mrr'
    GROUP BY ALL
)
SELECT
    sp.sweep,
    sp.position,
    sp.point_id,
    sp.label,
    sp.params,
    sp.status,
    sp.run_id,
    sp.seconds,
    pr.winner_step,
    t.step              AS trained_step,
    coalesce(t.model_id, ds.model_id) AS trained_model_id,
    coalesce(t.selection_metric, CASE WHEN ds.model_id IS NOT NULL THEN 'wordpred-dev-mrr' END) AS selection_metric,
    u.selection_score   AS untrained_selection,
    coalesce(t.selection_score, wd.mrr) AS trained_selection,
    lb.stsb_dev,
    lb.avg_sts,
    lb.revdict_mrr      AS revdict_head_mrr,
    lb.revdict_mrr_cosine AS revdict_cosine_mrr,
    h.mrr               AS revdict_hybrid_mrr,
    d.cosine_mrr        AS revdict_dev_cosine_mrr,
    d.head_mrr          AS revdict_dev_head_mrr,
    sp.note
FROM sweep_points AS sp
LEFT JOIN runs AS r ON r.run_id = sp.run_id
LEFT JOIN pst_runs AS pr ON pr.run_id = sp.run_id
LEFT JOIN trained AS t ON t.run_id = sp.run_id
LEFT JOIN untrained AS u ON u.run_id = sp.run_id
LEFT JOIN defsent AS ds ON ds.run_id = sp.run_id AND t.model_id IS NULL
LEFT JOIN wordpred_dev AS wd ON wd.model_id = ds.model_id
LEFT JOIN model_headline AS lb
    ON lb.model_id = coalesce(t.model_id, ds.model_id)
   AND coalesce(lb.pooling, '') = coalesce(json_extract_string(r.config, '$.eval.pooling'), 'mean')
LEFT JOIN hybrid AS h
    ON h.model_id = coalesce(t.model_id, ds.model_id) AND h.pooling = coalesce(json_extract_string(r.config, '$.eval.pooling'), 'mean')
LEFT JOIN dev AS d
    ON d.model_id = coalesce(t.model_id, ds.model_id) AND d.pooling = coalesce(json_extract_string(r.config, '$.eval.pooling'), 'mean')
ORDER BY sp.sweep, sp.position;
