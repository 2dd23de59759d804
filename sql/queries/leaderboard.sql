-- The leaderboard: one row per (model, pooling), best 7-task STS average first.
-- Columns: STS Spearman x 100 ('all' setting), avg_sts over the n_avg of the 7 tasks present,
-- reverse-dictionary MRR (head, cosine and hybrid modes; dev MRR when PST selected by it).
SELECT model_id, pooling, method,
       round(sts12, 2) AS sts12, round(sts13, 2) AS sts13, round(sts14, 2) AS sts14,
       round(sts15, 2) AS sts15, round(sts16, 2) AS sts16, round(stsb_dev, 2) AS stsb_dev,
       round(stsb_test, 2) AS stsb_test, round(sickr, 2) AS sickr,
       round(avg_sts, 2) AS avg_sts, n_avg,
       round(revdict_mrr, 4) AS revdict_mrr, round(revdict_mrr_cosine, 4) AS revdict_mrr_cosine,
       round(revdict_mrr_hybrid, 4) AS revdict_mrr_hybrid, round(revdict_dev_mrr, 4) AS revdict_dev_mrr
FROM leaderboard
ORDER BY avg_sts DESC NULLS LAST, stsb_dev DESC NULLS LAST, model_id, pooling;
