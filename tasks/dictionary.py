"""Prefect wrappers of the dictionary ingest's pieces: tasks, no decisions.

The order is the library's (:func:`defsentflow.dictionary.ingest_dictionary`); the
``ingest-dictionary`` flow hands it :data:`DICTIONARY_TASKS`. Each cached task takes small JSON
parameters (the config's settings and the sources as :func:`tasks.caching.file_ref` dicts: path +
content hash), so its cache key follows the data, the config and the code version, never the run;
the step adapters turn the library's arguments into those and the references back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from defsentflow.dictionary import (
    DictionaryArtifact,
    DictionaryConfig,
    DictionaryPlan,
    build_dictionary,
    register_dictionary,
)
from defsentflow.dictionary.ingest import DictionarySteps
from defsentflow.dictionary.store import read_summary
from defsentflow.tasks.caching import file_ref, stage_task
from defsentflow.tasks.retries import IO_RETRIES

__all__ = ["DICTIONARY_TASKS"]


def _config(params: dict[str, Any], sources: list[dict[str, Any]]) -> DictionaryConfig:
    srcs = [{"kind": s["kind"], "name": s.get("name"), "paths": [f["path"] for f in s["files"]]} for s in sources]
    return DictionaryConfig(**params, sources=srcs)


def _json(config: DictionaryConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    refs = [{"kind": s.kind, "name": s.name, "files": [file_ref(p) for p in s.paths]} for s in config.sources]
    return config.model_dump(mode="json", exclude={"sources"}), refs


@stage_task(name="build-dictionary", **IO_RETRIES)
def build_dictionary_artifact(params: dict[str, Any], sources: list[dict[str, Any]]) -> dict[str, Any]:
    """Read, merge, split and write the Parquet artifact (found, not rebuilt, if its key exists)."""
    art = build_dictionary(_config(params, sources))
    return {"key": art.key, "path": str(art.path), "built": art.built}


@stage_task(name="register-dictionary", **IO_RETRIES)
def register_dictionary_dataset(params: dict[str, Any], sources: list[dict[str, Any]],
                                artifact: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    """Load the artifact into the catalog as the dataset ``params['name']`` (one transaction)."""
    summary = read_summary(artifact["path"])
    if summary is None:
        raise FileNotFoundError(f"dictionary artifact incomplete or gone: {artifact['path']}")
    art = DictionaryArtifact(artifact["key"], Path(artifact["path"]), summary, artifact["built"])
    wrote = register_dictionary(_config(params, sources), art, DictionaryPlan(**plan))
    return {"key": art.key, "path": artifact["path"], "registered": wrote}


def _build_step(config: DictionaryConfig, plan: DictionaryPlan, *, root=None) -> DictionaryArtifact:
    ref = build_dictionary_artifact(*_json(config))
    summary = read_summary(ref["path"])
    if summary is None:
        raise FileNotFoundError(f"dictionary artifact incomplete or gone: {ref['path']}")
    return DictionaryArtifact(ref["key"], Path(ref["path"]), summary, ref["built"])


def _register_step(config: DictionaryConfig, art: DictionaryArtifact, plan: DictionaryPlan, *, root=None) -> bool:
    artifact = {"key": art.key, "path": str(art.path), "built": art.built}
    plan_ref = {"key": plan.key, "input_hashes": plan.input_hashes, "key_config": plan.key_config}
    return register_dictionary_dataset(*_json(config), artifact, plan_ref)["registered"]


DICTIONARY_TASKS = DictionarySteps(build=_build_step, register=_register_step)
