-- `defsentflow datasets`: one row per dictionary dataset with entry, definition and per-split counts.
SELECT
    d.name                                                  AS dataset,
    d.variant,
    count(DISTINCT f.entry)                                 AS entries,
    count(f.entry)                                          AS definitions,
    count(*) FILTER (WHERE f.split = 'train')               AS train,
    count(*) FILTER (WHERE f.split = 'dev')                 AS dev,
    count(*) FILTER (WHERE f.split = 'test')                AS test,
    d.examples,
    d.quarantined,
    left(d.artifact_key, 12)                                AS artifact,
    strftime(d.updated_at, '%Y-%m-%d %H:%M')                AS updated
FROM dictionaries d
LEFT JOIN definitions f ON f.dataset = d.name
GROUP BY ALL
ORDER BY d.name;
