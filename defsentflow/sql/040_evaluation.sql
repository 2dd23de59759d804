-- Evaluation: entry-space statistics per PST step, per-id headline scores and the PST progress view.
-- Idempotent: applied on every open.

-- pst_steps is created by 030_training.sql (files are applied in order); the views below read it.

-- Geometry of one entry matrix [n_entries, dim] (defsentflow.report.isotropy.entry_space_stats).
CREATE TABLE IF NOT EXISTS entry_space_stats (
    run_id             VARCHAR NOT NULL,
    step               INTEGER NOT NULL,
    matrix_key         VARCHAR NOT NULL,       -- artifact key (or content hash) of the matrix
    seed               INTEGER,
    matrix_path        VARCHAR,
    n_entries          BIGINT NOT NULL,
    dim                INTEGER NOT NULL,
    avg_cosine         DOUBLE,                 -- mean cosine of random pairs of rows
    top1_var_share     DOUBLE,                 -- share of variance on the first principal component
    isoscore           DOUBLE,                 -- IsoScore (Rudman et al. 2022), 0 .. 1
    partition_isotropy DOUBLE,                 -- min/max of the partition function (Mu & Viswanath 2018)
    effective_rank     DOUBLE,                 -- exp(entropy of the normalised singular values)
    mean_norm          DOUBLE,
    plot_path          VARCHAR,                -- PNG: 2-D SVD and whitened PCA scatter
    created_at         TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, step, matrix_key)
);

-- model_headline: fixed columns for pst_progress and sweep_results (one row per model id as filed,
-- not merged). The leaderboard (one row per model, a column per figure run) is 100_leaderboard.sql.
-- One row per (model id, pooling): the newest value of each headline metric the two views read.
-- STS columns are Spearman x 100 in the 'all' setting at the canonical settings; revdict columns are
-- MRR in [0, 1], the newest of the task whatever its variant (a sweep's points share their eval
-- settings; the leaderboard names each variant apart). avg_sts is the mean over the STS-average tasks
-- of the registry (in_sts_average, 039_eval_tasks: sts12-16, stsb-test, sickr), only when all seven
-- are present (empty otherwise); n_avg says how many are, so a partial average is never shown under
-- the 7-task name.
CREATE OR REPLACE VIEW model_headline AS
WITH latest AS (
    SELECT * FROM metrics
    QUALIFY row_number() OVER (
        PARTITION BY model_id, coalesce(pooling, ''), task, setting, metric ORDER BY created_at DESC
    ) = 1
), wide AS (
    SELECT
        l.model_id,
        l.pooling,
        max(l.value) FILTER (WHERE l.task = 'stsb-dev'  AND l.setting = 'all' AND l.metric = 'spearman') AS stsb_dev,
        avg(l.value) FILTER (WHERE in_sts_average(l.task) AND task_variant(l.task) IS NULL
                             AND l.setting = 'all' AND l.metric = 'spearman') AS avg_sts,
        count(*) FILTER (WHERE in_sts_average(l.task) AND task_variant(l.task) IS NULL
                         AND l.setting = 'all' AND l.metric = 'spearman') AS n_avg,
        arg_max(l.value, l.created_at) FILTER (WHERE task_base(l.task) = 'revdict' AND l.setting = 'head' AND l.metric = 'mrr') AS revdict_mrr,
        arg_max(l.value, l.created_at) FILTER (WHERE task_base(l.task) = 'revdict' AND l.setting = 'cosine' AND l.metric = 'mrr') AS revdict_mrr_cosine,
        arg_max(l.value, l.created_at) FILTER (WHERE task_base(l.task) = 'revdict' AND l.setting = 'hybrid' AND l.metric = 'mrr') AS revdict_mrr_hybrid,
        -- PST's selection score when it selected by reverse dictionary (dev split, its mode)
        arg_max(l.value, l.created_at) FILTER (WHERE task_base(l.task) = 'revdict-dev' AND l.metric = 'mrr') AS revdict_dev_mrr,
        max(l.created_at) AS evaluated_at
    FROM latest AS l
    GROUP BY l.model_id, l.pooling
)
SELECT
    w.model_id,
    w.pooling,
    m.method,
    m.base_model,
    w.stsb_dev,
    CASE WHEN w.n_avg = sts_average_size() THEN w.avg_sts END AS avg_sts,   -- all seven, else empty (n_avg: how many)
    w.n_avg,
    w.revdict_mrr,
    w.revdict_mrr_cosine,
    w.revdict_mrr_hybrid,
    w.revdict_dev_mrr,
    m.run_id,
    w.evaluated_at
FROM wide AS w
LEFT JOIN models AS m ON m.model_id = w.model_id;

-- Per PST run and step: every candidate with its selection score, the geometry of the entry
-- matrix it was trained against (matched by path, else by seed) and its STS-B dev score.
-- chosen: the one candidate the run returned (its winning step's best); step_best: the best
-- candidate of each step (pst_steps.chosen), which the next step continues from.
CREATE OR REPLACE VIEW pst_progress AS
WITH matched AS (
    SELECT
        p.run_id, p.step, p.seed, p.model_id,
        coalesce(p.chosen AND p.step = r.winner_step AND p.model_id = r.winner_model_id, FALSE) AS chosen,
        p.chosen AS step_best, p.selection_metric, p.selection_score, p.lr,
        p.pooling, p.entry_encoding, p.use_pooler, p.entry_matrix_path, p.note, p.created_at,
        e.matrix_key, e.n_entries, e.dim, e.avg_cosine, e.top1_var_share, e.isoscore,
        e.partition_isotropy, e.effective_rank, e.plot_path
    FROM pst_steps AS p
    LEFT JOIN pst_runs AS r ON r.run_id = p.run_id
    LEFT JOIN entry_space_stats AS e
        ON e.run_id = p.run_id AND e.step = p.step
       AND (e.matrix_path = p.entry_matrix_path OR e.seed IS NOT DISTINCT FROM p.seed)
    QUALIFY row_number() OVER (
        PARTITION BY p.run_id, p.step, p.seed, p.model_id, p.created_at
        ORDER BY (e.matrix_path = p.entry_matrix_path) DESC NULLS LAST, e.created_at DESC NULLS LAST
    ) = 1
)
SELECT
    x.*,
    lb.stsb_dev,
    lb.avg_sts
FROM matched AS x
LEFT JOIN model_headline AS lb
    ON lb.model_id = x.model_id AND coalesce(lb.pooling, '') = coalesce(x.pooling, '')
ORDER BY x.run_id, x.step, x.step_best DESC, x.selection_score DESC NULLS LAST;
