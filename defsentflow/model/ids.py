"""The one id rule: what a model is called in the catalog, and which names are only aliases.

A model's id names its content, so the same model has the same id on every run that produces it:

* a model trained here: ``<method prefix>-<first 12 of its content key>`` (``dsp-`` DefSent+,
  ``defsent-`` DefSent); a config-named trainer (the MLM pretraining, the surrogate):
  ``<its name>-<first 10 of its content key>``. The content key is a hash of the inputs, the settings
  and the code version (:func:`defsentflow.training.keys.artifact_key`): a re-run of the same config
  files the same id.
* a model made elsewhere (a hub id, the bundled ``minilm``, a folder outside the data root):
  ``base:<its name>``, the name a user would pass (``minilm`` reads as the checkpoint's own name,
  ``all-MiniLM-L6-v2``); its files' content hash is kept beside it, never the path it was found at.

Names scoped to a run (PST's choice, ``pst-<run id>``) are aliases of such an id (the catalog's
``model_names`` table): they keep naming the model after a re-run, and the leaderboard shows the id.

A model shown with another pooling than its own (a baseline's CLS row, the winner's extra STS
poolings) is filed as ``<id>+<pooling>`` (:func:`pooled_model_id`).

Example:
    >>> trained_model_id("defsent_plus", "2d352f6268e3ab")
    'dsp-2d352f6268e3'
    >>> base_model_id("minilm"), base_model_id("/models/bert-base-uncased")
    ('base:all-MiniLM-L6-v2', 'base:bert-base-uncased')
    >>> run_alias("demo-e0f06e6c"), pooled_model_id("base:all-MiniLM-L6-v2", "cls")
    ('pst-demo-e0f06e6c', 'base:all-MiniLM-L6-v2+cls')
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from defsentflow.storage.paths import place_relpath

__all__ = ["BASE_PREFIX", "BUNDLED_NAMES", "ModelSlot", "base_model_id", "model_slot", "named_model_id",
           "pooled_model_id", "run_alias", "trained_model_id"]

BASE_PREFIX = "base:"
BUNDLED_NAMES: dict[str, str] = {alias: "all-MiniLM-L6-v2"
                                 for alias in ("minilm", "bundled:minilm", "bundled:all-MiniLM-L6-v2")}
"""The checkpoint's own name of each bundled alias (the name its base id shows)."""
_METHOD_PREFIX = {"defsent_plus": "dsp", "defsent": "defsent"}


def trained_model_id(method: str, key: str) -> str:
    """The id of a model trained here by ``method`` (``defsent_plus`` or ``defsent``) under content key ``key``."""
    return f"{_METHOD_PREFIX.get(method, method)}-{key[:12]}"


def named_model_id(name: str, key: str) -> str:
    """The id of a model a config names (the MLM pretraining's or the surrogate's ``name``), content key ``key``."""
    return f"{name}-{key[:10]}"


def base_model_id(base_model: str | os.PathLike) -> str:
    """The id of a model made elsewhere, from the name it was given (a bundled alias, a hub id, a folder)."""
    name = str(base_model)
    return BASE_PREFIX + BUNDLED_NAMES.get(name, Path(name.rstrip("/")).name or name)


def run_alias(run_id: str) -> str:
    """PST's name for the model a run chose: an alias of that model's id."""
    return f"pst-{run_id}"


def pooled_model_id(model_id: str, pooling: str) -> str:
    """The id a model's figures with a pooling other than its own are filed under (``<id>+<pooling>``)."""
    return f"{model_id}+{pooling}"


@dataclass(frozen=True)
class ModelSlot:
    """A trained model's content key, catalog id, folder and checkpoint folder (both relative to the
    data root)."""

    key: str
    method: str
    model_id: str
    folder: str
    checkpoint: str


def model_slot(method: str, key: str) -> ModelSlot:
    """Where a model trained here lies: its id by the one id rule (:func:`defsentflow.model.ids.trained_model_id`:
    ``dsp-<key12>`` for DefSent+, ``defsent-<key12>``) under ``models/pst/<key>``."""
    return ModelSlot(key=key, method=method, model_id=trained_model_id(method, key), folder=place_relpath("pst_models", key),
                     checkpoint=place_relpath("pst_checkpoints", key))
