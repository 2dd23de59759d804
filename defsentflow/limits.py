"""Every bound of the project, in one place: config counts, command-line flags, input files,
on-disk records, the catalog's DuckDB connections and the web server.

A value past its maximum could only fail later (memory, time, an overflow deep in a library) or
let one input hold the machine; it is refused where it enters instead, with one line naming the
file and key or the flag. ``docs/security.md`` lists the table. A leaf module: it imports
nothing from the project, so the storage layer, the config sections and the CLI all read it.
"""

from __future__ import annotations

__all__ = ["LIMITS", "FLAG_LIMITS", "DUCKDB_READER"]

LIMITS: dict[str, int] = {
    # -- config counts (config_tools re-exports LIMITS; the CLI flags of FLAG_LIMITS share them) --
    "seed": 2**32 - 1,          # seed, seeds[], random_state: numpy's seed range
    "pst_steps": 100,           # PST steps, max_steps, ica_step, transition_steps[], claims steps
    "list_items": 1000,         # seeds, grid points, transition steps
    "epochs": 1000,
    "opt_steps": 10_000_000,    # optimizer steps, warm-up, checkpoint intervals
    "batch": 65_536,            # every batch size
    "workers": 256,             # processes and threads
    "tokens": 8192,             # max_length, max_seq_length, max_position_embeddings
    "width": 65_536,            # hidden / intermediate sizes
    "layers": 256,              # layers, attention heads
    "count": 100_000_000,       # pairs, entries, queries, candidates, chunks, iterations, characters
    "top_k": 1000,              # results of one look-up (revdict -k)
    "seconds": 86_400,          # time limits (sql --timeout, serve --query-timeout)
    "wait_ms": 1000,            # serve --max-wait-ms: a look-up never waits longer for company
    "port": 65_535,
    "rows": 10_000,             # rows a listing prints (runs --limit)
    # -- input files --------------------------------------------------------------------------------
    "nesting": 64,              # depth of nested lists/mappings in a JSON or YAML input (configs, sources, records)
    "yaml_aliases": 100,        # alias references (*name) in one YAML document
    "yaml_nodes": 200_000,      # nodes of a YAML document once every alias is counted as a copy
    "quarantine_chars": 8_000_000,  # raw text kept in quarantine per input file (a 300 KB file cannot make GBs)
    # -- on-disk records (storage.record_checks) ----------------------------------------------------
    "record_bytes": 64 * 2**20,     # one artifact record or catalog-row record
    "record_items": 1_000_000,      # files of a manifest, rows of one record
    "record_text": 1_000_000,       # characters of one string value in a record
    # -- the catalog's reader connections (sql, serve, leaderboard, report) ----------------------
    "duckdb_memory_mb": 2048,
    "duckdb_threads": 2,
    # -- serve (uvicorn) ----------------------------------------------------------------------------
    "header_timeout_s": 10,     # a connection must send its request line and headers within this
    "keep_alive_s": 5,          # an idle kept-alive connection is closed after this
    "connections": 1000,        # open connections; more are answered 503
}

# Command-line flags with a count or a time: (limit name, minimum). A flag not listed here and not
# bounded otherwise is a test failure (tests/security/test_limits.py walks the parser).
FLAG_LIMITS: dict[str, tuple[str, float]] = {
    "--workers": ("workers", 1),
    "--local-workers": ("workers", 0),
    "--threads": ("workers", 1),
    "--batch-size": ("batch", 1),
    "--max-batch": ("batch", 1),
    "--max-length": ("tokens", 1),
    "--max-chars": ("count", 1),
    "--chunk-sentences": ("count", 1),
    "--revdict-max-queries": ("count", 1),
    "--top-n": ("count", 1),
    "--max-points": ("count", 1),
    "--stop-after-steps": ("opt_steps", 1),
    "--seed": ("seed", 0),
    "-k": ("top_k", 1),
    "--max-wait-ms": ("wait_ms", 0),
    "--timeout": ("seconds", 0.001),
    "--query-timeout": ("seconds", 0.001),
    "--lock-timeout": ("seconds", 0.1),
    "--port": ("port", 0),
    "--limit": ("rows", 1),
}

# Settings of every read-only catalog connection a command opens for reading (DuckDB's defaults are
# 80% of the machine's memory and every core: one `sql` could take the machine from a run).
DUCKDB_READER: dict[str, object] = {"memory_limit": f"{LIMITS['duckdb_memory_mb']}MiB",
                                    "threads": LIMITS["duckdb_threads"]}
