"""The ``revdict`` flow: serve reverse-dictionary look-ups from the cached faiss index.

``mode="auto"`` serves the mode with the better measured MRR for the model (see
:mod:`defsentflow.revdict.index`). ``add`` extends the index with new (entry, definition) rows
first, encoding only those (no retraining); later look-ups of the same model and dictionary
include them. The index itself is a content-keyed artifact of the library, so the tasks are not
cached by Prefect.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from defsentflow.revdict import RevdictIndex, build_revdict_index
from defsentflow.tasks.step import step_task


def _revdict_index(model: str, dictionary: str, mode: str, add: list[dict[str, str]] | None) -> dict[str, Any]:
    """Build or load the index (and extend it with ``add``); returns its path and meta."""
    import pyarrow as pa  # lazy: pyarrow loads only where it is used

    index = build_revdict_index(model, dictionary, mode=mode)
    if add:
        index = index.add(pa.table({"entry": [r["entry"] for r in add], "definition": [r["definition"] for r in add]}))
    return {"path": str(index.path), "meta": index.meta, "n_entries": len(index.entries)}


def _revdict_search(index_path: str, definitions: list[str], k: int) -> list[dict[str, Any]]:
    hits = RevdictIndex(index_path).search(definitions, k=k)
    return [{"definition": d, "entries": [{"entry": e, "score": s} for e, s in h]} for d, h in zip(definitions, hits)]


revdict_index = step_task(_revdict_index, "revdict-index")
revdict_search = step_task(_revdict_search, "revdict-search")


@flow(name="revdict", log_prints=True)
def revdict_flow(model: str, definitions: list[str], dictionary: str = "sample", k: int = 10, mode: str = "auto",
                 add: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """Top-``k`` entries (with scores) for each definition; ``add`` extends the index first."""
    if k < 1:
        raise ValueError("k must be >= 1")
    index = revdict_index(model, dictionary, mode, add)
    results = revdict_search(index["path"], list(definitions), k) if definitions else []
    print(f"revdict: {index['meta']['mode']} mode over {index['n_entries']} entries of {dictionary!r}; "
          f"{len(results)} look-ups")
    return {"mode": index["meta"]["mode"], "index": index["path"], "n_entries": index["n_entries"], "results": results}
