-- PST progress of one run ($run_id): per step and candidate, the selection score, the entry
-- space's geometry and the candidate's STS-B dev Spearman. chosen: the candidate the run returned;
-- step_best: the best of its step.
SELECT step, seed, model_id, chosen, step_best, selection_metric, round(selection_score, 4) AS selection_score, lr,
       n_entries, dim, round(avg_cosine, 4) AS avg_cosine, round(top1_var_share, 4) AS top1_var_share,
       round(isoscore, 4) AS isoscore, round(partition_isotropy, 4) AS partition_isotropy,
       round(stsb_dev, 2) AS stsb_dev, plot_path
FROM pst_progress
WHERE run_id = $run_id
ORDER BY step, step_best DESC, selection_score DESC NULLS LAST, seed;
