-- The artifacts one run ($run_id) registered, with their content hashes and inputs.
SELECT kind, name, artifact_key, content_hash, path, input_hashes, code_version, created_at
FROM artifacts
WHERE run_id = $run_id
ORDER BY created_at, kind, name;
