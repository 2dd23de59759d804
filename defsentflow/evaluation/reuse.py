"""The one evaluation store: finished evaluations by their content key.

The key (:func:`defsentflow.evaluation.suite.evaluation_key`) is what the figures depend on, by
content: the model's files, the evaluation settings (never the id the scores are filed under, the
folder names or the cache switch), the evaluation data's files, the dictionary's artifact key for
the dictionary tasks, and the code version. The rows are stored under the data root
(``cache/evaluations``) as an artifact of kind ``evaluation``, so the same key finds them whoever
evaluates: ``defsentflow eval``, the ``evaluate`` flow in a ``defsentflow run``, a deployment run on
a worker, or PST's selection (:mod:`defsentflow.evaluation.selection`, written by the candidate's
worker and registered by the flow).

Example:
    >>> key = evaluation_key(section, "/models/m")
    >>> stored_evaluation(key) or store_evaluation(key, evaluate(...))
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from defsentflow.storage import Catalog, hash_file, root_place, write_json

__all__ = ["store_evaluation", "stored_evaluation"]


def stored_evaluation(key: str, root: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """The stored result of ``key`` (``pooling``, ``rows``, ``seconds``), if it is registered and its
    file is the one registered; else None."""
    cat = Catalog(root)
    if not cat.path.is_file():
        return None
    art = cat.artifact(key)
    if art is None:
        return None
    try:
        data = json.loads(Path(art["path"]).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("rows"), list) else None


def store_evaluation(key: str, evaluated: dict[str, Any], *, run_id: str | None = None,
                     root: str | os.PathLike | None = None) -> Path:
    """Write the result (``pooling``, ``rows``, ``seconds``) under the data root and register it."""
    cat = Catalog(root)
    path = root_place(cat.root, "evaluations", f"{key}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json({k: evaluated[k] for k in ("pooling", "rows", "seconds")}, path)
    cat.register_artifact(key, "evaluation", path, hash_file(path), run_id=run_id)
    return path
