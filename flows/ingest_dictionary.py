"""The ``ingest-dictionary`` flow: dictionary sources -> a named dataset in the catalog."""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.dictionary import DictionaryConfig
from defsentflow.dictionary.split import DEFAULT_RATIOS
from tasks.caching import file_ref
from tasks.dictionary import build_dictionary, register_dictionary


@flow(name="ingest-dictionary", log_prints=True)
def ingest_dictionary(name: str, sources: list[dict[str, Any]], variant: str = "a", tokenizer: str | None = None,
                      seed: int = 0, case_fold: bool = True, max_chars: int = 1000, workers: int = 2,
                      split_by: str = "entry", ratios: tuple[float, float, float] = DEFAULT_RATIOS) -> dict[str, Any]:
    """Build and register dictionary dataset ``name`` from ``sources`` (``{"kind", "paths"[, "name"]}``).

    Cached by the sources' content hashes, the parameters and the code version: a second run on
    unchanged sources is a cache hit for every task. A missing source fails before any task runs.
    """
    params = DictionaryConfig(name=name, sources=sources, variant=variant, tokenizer=tokenizer, seed=seed,
                              case_fold=case_fold, max_chars=max_chars, workers=workers, split_by=split_by,
                              ratios=ratios)
    refs = [{"kind": s.kind, "name": s.name, "files": [file_ref(p) for p in s.paths]} for s in params.sources]
    settings = params.model_dump(mode="json", exclude={"sources"})
    artifact = build_dictionary(settings, refs)
    result = register_dictionary(settings, refs, artifact)
    print(f"dictionary {name}: {result['entries']} entries, {result['definitions']} definitions, "
          f"{result['quarantined']} quarantined; splits {result['splits']}")
    return result
