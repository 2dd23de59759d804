-- What each artifact's files were at registration (defsentflow/storage/manifest.py): checked
-- before reuse (names, sizes, quick hashes) and by `defsentflow verify` (full hashes).
-- NULL for artifacts registered by older code (verify then compares content_hash).
ALTER TABLE artifacts ADD COLUMN IF NOT EXISTS size_bytes BIGINT;
ALTER TABLE artifacts ADD COLUMN IF NOT EXISTS manifest JSON;
ALTER TABLE artifacts ADD COLUMN IF NOT EXISTS manifest_hash VARCHAR;
