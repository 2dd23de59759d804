-- Rejected input records per dataset, source and reason (details in the quarantine table).
SELECT dataset, source, reason, count(*) AS records, min(file) AS example_file, min(line) AS first_line
FROM quarantine
GROUP BY ALL
ORDER BY records DESC, dataset, source, reason;
