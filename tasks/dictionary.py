"""Prefect tasks for dictionary ingestion: thin calls into :mod:`defsentflow.dictionary`.

Both tasks take small JSON parameters: the boundary parameters and the sources as
:func:`tasks.caching.file_ref` dicts (path + content hash), so the cache key follows the data,
the config and the code version, never the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.caching import stage_task
from tasks.retries import IO_RETRIES


def _config(params: dict[str, Any], sources: list[dict[str, Any]]):
    from defsentflow.dictionary import DictionaryConfig

    srcs = [{"kind": s["kind"], "name": s.get("name"), "paths": [f["path"] for f in s["files"]]} for s in sources]
    return DictionaryConfig(**params, sources=srcs)


@stage_task(name="build-dictionary", **IO_RETRIES)
def build_dictionary(params: dict[str, Any], sources: list[dict[str, Any]]) -> dict[str, Any]:
    """Read, merge, split and write the Parquet artifact (found, not rebuilt, if its key exists)."""
    from defsentflow.dictionary import build_dictionary as build, plan_dictionary

    config = _config(params, sources)
    plan = plan_dictionary(config)
    art = build(config, plan)
    return {"key": art.key, "path": str(art.path), "built": art.built, "input_hashes": plan.input_hashes,
            "key_config": plan.key_config, "entries": art.summary["entries"], "definitions": art.summary["definitions"]}


@stage_task(name="register-dictionary", **IO_RETRIES)
def register_dictionary(params: dict[str, Any], sources: list[dict[str, Any]], artifact: dict[str, Any]) -> dict[str, Any]:
    """Load the artifact into the catalog as the dataset ``params['name']`` (one transaction)."""
    from defsentflow.dictionary import DictionaryArtifact, DictionaryPlan, register_dictionary as register
    from defsentflow.dictionary.store import read_summary

    config = _config(params, sources)
    summary = read_summary(artifact["path"])
    if summary is None:
        raise FileNotFoundError(f"dictionary artifact incomplete or gone: {artifact['path']}")
    art = DictionaryArtifact(artifact["key"], Path(artifact["path"]), summary, artifact["built"])
    wrote = register(config, art, DictionaryPlan(art.key, artifact["input_hashes"], artifact["key_config"]))
    keys = ("read", "accepted", "duplicates", "excluded", "quarantined", "entries", "definitions", "examples")
    return {"name": config.name, "key": art.key, "path": artifact["path"], "registered": wrote,
            **{k: summary[k] for k in keys}, "splits": {k: v["definitions"] for k, v in summary["splits"].items()}}
