"""Save encoders in the sentence-transformers layout, written by sentence-transformers' own save.

A saved encoder is what was evaluated: ``SentenceTransformer(path).encode`` gives the vectors
``defsentflow encode`` and the STS evaluation compute (same pooling, same token length
:data:`EVAL_MAX_LENGTH`, not the shorter training length), followed by ``Normalize`` when the base
model had it (all-MiniLM-L6-v2 does; cosine similarity is unchanged by it, dot products are).
Poolings sentence-transformers has no module for (``prompt``, ``sbert_wk``) get
:class:`UnsupportedPooling` in ``modules.json``: loading refuses in one line instead of silently
falling back to mean pooling.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from defsentflow.encoders.card import model_card
from defsentflow.encoders.loading import model_construction, resolve_model_path
from defsentflow.model import Head, model_head
from defsentflow.model.record import ModelRecord, read_model_record, write_model_record
from defsentflow.storage.atomic import atomic_dir

__all__ = ["EVAL_MAX_LENGTH", "ST_POOLING", "UnsupportedPooling", "base_has_normalize", "make_readable",
           "normalizes", "save_encoder", "st_pooling_mode", "write_st_modules"]

# The STS evaluation's token length (EvalConfig.max_length's default; a test keeps the two equal).
EVAL_MAX_LENGTH = 256

# Our poolings -> sentence-transformers Pooling modes; prompt and sbert_wk have none.
ST_POOLING = {"cls": "cls", "mean": "mean", "max": "max"}

# What our own save_pretrained wrote and the sentence-transformers save must not replace.
_KEEP = ("config.json",)


class UnsupportedPooling(torch.nn.Module):
    """A ``modules.json`` entry for a pooling sentence-transformers lacks: loading it refuses."""

    @classmethod
    def load(cls, model_name_or_path: str = "", *args: Any, **kwargs: Any) -> UnsupportedPooling:
        rec = read_model_record(model_name_or_path) if Path(str(model_name_or_path)).is_dir() else None
        pooling = rec.pooling if rec is not None else "?"
        raise ValueError(f"{model_name_or_path}: pooling {pooling!r} has no sentence-transformers module; "
                         "encode with `defsentflow encode` instead")


def st_pooling_mode(pooling: str) -> str:
    """The sentence-transformers pooling mode for ours; ValueError (one line) for prompt and sbert_wk."""
    if pooling not in ST_POOLING:
        raise ValueError(f"pooling {pooling!r} has no sentence-transformers module (supported: "
                         f"{', '.join(ST_POOLING)}); it cannot be exported for SentenceTransformer")
    return ST_POOLING[pooling]


def base_has_normalize(base_model: str | os.PathLike | None) -> bool:
    """Whether a sentence-transformers base directory ends its modules with ``Normalize``."""
    if not base_model:
        return False

    modules = Path(resolve_model_path(base_model)) / "modules.json"
    if not modules.is_file():
        return False
    try:
        return any(str(m.get("type", "")).endswith("Normalize") for m in json.loads(modules.read_text()))
    except (ValueError, AttributeError):
        return False


def normalizes(model_dir: str | os.PathLike, head: Head | None = None) -> bool:
    """Whether the model's sentence vectors are L2-normalised, for ``export model`` and ``encode`` alike:
    as its head says (:func:`defsentflow.model.model_head`), else as its base model (or the folder
    itself) ends its sentence-transformers modules (all-MiniLM-L6-v2: with ``Normalize``)."""
    head = head or model_head(resolve_model_path(model_dir))
    if head.normalize is not None:
        return bool(head.normalize)
    return base_has_normalize(head.base_model) or base_has_normalize(model_dir)


def make_readable(path: str | os.PathLike) -> None:
    """Files 0644 and folders 0755 under ``path`` (safetensors writes its weights 0600)."""
    root = Path(path)
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)


def write_st_modules(model_dir: str | os.PathLike, *, pooling: str, max_seq_length: int = EVAL_MAX_LENGTH,
                     normalize: bool = False) -> None:
    """Add the sentence-transformers files to a Hugging Face model directory, through ST's own save.

    ``modules.json``, ``config_sentence_transformers.json`` (cosine similarity),
    ``sentence_bert_config.json``, the tokenizer config carrying ``max_seq_length``, ``1_Pooling``
    and ``2_Normalize``; the model's weights and ``config.json`` stay as they are.
    """
    from sentence_transformers import (
        SentenceTransformer,  # lazy: sentence-transformers loads torch; only training and encoding need it
    )
    from sentence_transformers.sentence_transformer.modules import (  # lazy: sentence-transformers loads torch; only training and encoding need it
        Normalize,
        Pooling,
        Transformer,
    )

    out = Path(model_dir)
    supported = pooling in ST_POOLING
    with model_construction():
        word = Transformer(str(out), max_seq_length=max_seq_length, model_kwargs={"use_safetensors": True})
    modules: list[torch.nn.Module] = [word]
    if supported:
        modules.append(Pooling(word.get_embedding_dimension(), pooling_mode=st_pooling_mode(pooling)))
        if normalize:
            modules.append(Normalize())
    st = SentenceTransformer(modules=modules, similarity_fn_name="cosine", device="cpu")
    staging = out / ".st-save"
    st_log = logging.getLogger("sentence_transformers")
    level = st_log.level
    st_log.setLevel(max(level, logging.WARNING))  # not "Saving model to <temporary folder>"
    try:
        st.save(str(staging), create_model_card=False)
    finally:
        st_log.setLevel(level)
    for entry in staging.iterdir():
        if entry.suffix == ".safetensors" or entry.name in _KEEP:
            continue
        target = out / entry.name
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(entry, target)
    shutil.rmtree(staging)
    if not supported:  # a refusal on load, never a silent mean
        entries = json.loads((out / "modules.json").read_text())
        entries.append({"idx": len(entries), "name": str(len(entries)), "path": "",
                        "type": f"{UnsupportedPooling.__module__}.UnsupportedPooling"})
        (out / "modules.json").write_text(json.dumps(entries, indent=2))


def _training_card(name: str, path: Path, info: dict[str, Any]) -> str:
    """The model card known at training time (no figures yet: ``defsentflow export model`` adds them)."""
    facts = {"model_id": name, "path": path, "meta": info, "row": None, "metrics": [], "pst": None, "dictionary": None}
    return model_card(facts, pooling=str(info["pooling"]), max_seq_length=int(info["max_seq_length"]),
                      normalize=bool(info["normalize"]))


def save_encoder(model: torch.nn.Module, tokenizer: Any, out_dir: str | os.PathLike, *, pooling: str = "mean",
                 max_seq_length: int = EVAL_MAX_LENGTH, normalize: bool | None = None,
                 meta: dict[str, Any] | None = None) -> Path:
    """Write a Hugging Face model + tokenizer + sentence-transformers modules, atomically.

    ``model`` is the backbone (``AutoModel``) with its pooler: the pooler stays with the model
    because the reverse dictionary's head mode uses it. ``max_seq_length`` is the length
    ``SentenceTransformer`` truncates to: the evaluation's, not the training length.
    ``normalize`` None: keep ``Normalize`` if ``meta["base_model"]`` has it. ``meta`` goes to
    ``defsentflow.json``; ``README.md`` is a model card without figures (``defsentflow export
    model`` writes one with the dev and test figures).
    """
    out = Path(out_dir)
    meta = dict(meta or {})
    if normalize is None:
        normalize = base_has_normalize(meta.get("base_model"))
    limit = getattr(model.config, "max_position_embeddings", None)
    if isinstance(limit, int) and limit > 0:
        max_seq_length = min(max_seq_length, limit)
    with atomic_dir(out) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        write_st_modules(tmp, pooling=pooling, max_seq_length=max_seq_length, normalize=normalize)
        info = ModelRecord.from_dict({"pooling": pooling, "max_seq_length": max_seq_length, "normalize": normalize,
                                      **meta}).to_dict()
        write_model_record(tmp, info)
        (tmp / "README.md").write_text(_training_card(out.name, tmp, info))
        make_readable(tmp)
    return out
