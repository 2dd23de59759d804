-- The leaderboard: one row per model (its other ids in also_known_as) and pooling, one column per
-- figure some model has, named <family>_<split>[_<protocol>][_<mode>]_<metric>, dev figures first,
-- rounded for display, sorted by the newest PST run's dev selection figure. The same SELECT as
-- `defsentflow leaderboard` and the web page (defsentflow/storage/leaderboard_view.py).
SELECT * FROM leaderboard;
