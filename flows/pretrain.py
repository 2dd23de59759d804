"""The ``pretrain`` flow: corpora (+ usage examples) -> a raw BERT encoder pretrained by masked-LM."""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow

from tasks.corpus import ingest_corpus
from tasks.pretrain import finish_pretrain, pretrain_encoder, resolve_pretrain_inputs


@flow(name="pretrain", log_prints=True)
def pretrain_flow(section: dict[str, Any], run_id: str | None = None) -> Any:
    """Pretrain from a ``pretrain:`` config section (a dict validated as ``PretrainSection``)."""
    from defsentflow.training.pretrain import PretrainOutcome
    from defsentflow.training.pretrain_config import PretrainSection

    section = PretrainSection.model_validate(section).model_dump(mode="json")
    run_id = run_id or f"pretrain-{uuid.uuid4().hex[:8]}"
    inputs = resolve_pretrain_inputs(section, run_id)
    keys = [ingest_corpus(c["sources"], c["name"])["key"] if c["sources"] else c["key"] for c in inputs["corpora"]]
    result = pretrain_encoder(section, keys, inputs["dictionary"], inputs["tokenizer"])
    return PretrainOutcome.from_dict(finish_pretrain(run_id, result))
