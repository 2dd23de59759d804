-- The Prefect-side stage cache (stage_cache) is gone: every stage's reuse is decided by the
-- library's content keys (artifacts), the same under the CLI, a flow and a deployment.
DROP TABLE IF EXISTS stage_cache;
