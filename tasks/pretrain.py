"""Prefect tasks for the masked-LM pretraining stage: thin calls into defsentflow.training.pretrain.

The corpora are ingested by the corpus stage's own cached task (``tasks.corpus.ingest_corpus``),
whose parameters are the source files with their content hashes; the pretraining task takes the
section as a dict, the resulting corpus keys and the dictionary/tokenizer hashes, so its cache key
changes with every input, the config and (via ``stage_task``) the code version.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.caching import file_ref, stage_task


def _section(section: dict[str, Any]):
    from defsentflow.training.pretrain_config import PretrainSection

    return PretrainSection.model_validate(section)


@task(name="pretrain-resolve-inputs", cache_policy=NO_CACHE)
def resolve_pretrain_inputs(section: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Start the run; each corpus's source files (with hashes) or, without paths, its ingested key;
    the dictionary's artifact key and the tokenizer's content hash."""
    from defsentflow.corpus import resolve_corpus
    from defsentflow.dictionary import resolve_dictionary
    from defsentflow.encoders import model_content_hash, resolve_model_path
    from defsentflow.storage import Catalog, hash_config
    from defsentflow.training.pretrain import corpus_sources

    s = _section(section)
    Catalog().start_run("pretrain", config=section, config_hash=hash_config(section), run_id=run_id)
    corpora = [{"name": name, "sources": [file_ref(p) for p in paths],
                "key": None if paths else resolve_corpus(name)["artifact_key"]} for name, paths in corpus_sources(s)]
    return {"corpora": corpora, "dictionary": resolve_dictionary(s.dictionary)[0] if s.dictionary else None,
            "tokenizer": model_content_hash(resolve_model_path(s.tokenizer))}


@stage_task(name="pretrain-encoder")
def pretrain_encoder(section: dict[str, Any], corpus_keys: list[str], dictionary_key: str | None,
                     tokenizer_hash: str) -> dict[str, Any]:
    """Pretrain (or find) the raw encoder; the library's content key skips the work on a hit as well."""
    from defsentflow.training.pretrain import run_pretrain

    return run_pretrain(_section(section), corpus_keys=corpus_keys, run_id=None).to_dict()


@task(name="pretrain-finish", cache_policy=NO_CACHE)
def finish_pretrain(run_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """Close the run, naming the model it produced; a ``pretrain`` stage row (keyed by the model's
    artifact key, a cached stage included) ties the model to this run for ``best-model --stage pretrain``."""
    from defsentflow.storage import Catalog

    cat = Catalog()
    if result.get("completed"):
        cat.record_stage(run_id, "pretrain", "completed", cache_key=result["key"], note=result["model_id"])
    cat.end_run(run_id, "completed", note=f"pretrained {result['model_id']}")
    return result
