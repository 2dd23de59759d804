"""``defsentflow export model``: an encoder as a self-contained sentence-transformers folder with a card.

The folder is what the evaluation measured (see :mod:`defsentflow.model.export`): weights,
tokenizer, the pooling, ``max_seq_length`` equal to the evaluation length, ``Normalize`` where
the base model has it, cosine similarity and ``config_sentence_transformers.json``, all written by
sentence-transformers' own save; plus ``README.md`` (the model card, :mod:`defsentflow.encoders.card`)
and ``defsentflow.json`` with no absolute path in it. Every file is readable by all (0644).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from defsentflow.encoders.card import base_name, model_card
from defsentflow.encoders.loading import require_safetensors, resolve_model_path
from defsentflow.model import model_head, record_of, write_model_record
from defsentflow.model.export import (
    EVAL_MAX_LENGTH,
    make_readable,
    normalizes,
    st_pooling_mode,
    write_st_modules,
)
from defsentflow.model.ids import base_model_id
from defsentflow.model.lookup import find_model
from defsentflow.storage import Catalog
from defsentflow.storage.outputs import output_dir

__all__ = ["ModelFacts", "export_model", "model_facts", "portable"]

# Files of a model folder the export rewrites itself (or leaves out).
_REWRITTEN = {"defsentflow.json", "README.md", "modules.json", "sentence_bert_config.json",
              "config_sentence_transformers.json", "data_config.json", ".gitattributes"}

ModelFacts = dict[str, Any]


def portable(value: Any) -> Any:
    """``value`` with every absolute path replaced by its last component (recursively)."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, str) and (value.startswith(("/", "~")) or (len(value) > 2 and value[1:3] in (":\\", ":/"))):
        return Path(value.replace("\\", "/")).name or value
    return value


def _model_row(model_id: str, root: str | os.PathLike | None) -> dict[str, Any] | None:
    cat = Catalog(root, reader=True)
    if not cat.path.is_file():
        return None
    rows = cat.query("SELECT * FROM models WHERE model_id = ?", [model_id])
    return rows[0] if rows else None


def model_facts(model: str, *, root: str | os.PathLike | None = None) -> ModelFacts:
    """What the card says about ``model`` (a catalog model id, a model folder or a bundled alias).

    Keys: ``model_id``, ``path``, ``meta`` (its ``defsentflow.json``), ``row`` (catalog ``models``),
    ``metrics`` (newest value per task/setting/metric), ``baseline`` (the untrained base model's
    ``model_id`` and ``metrics``, or None), ``pst`` (the ``pst_runs`` row of its run),
    ``dictionary`` (the ``dictionaries`` row it was trained on).

    Raises:
        UnknownModelError: nothing the one model lookup knows (one line, with the newest ids).
        FileNotFoundError: a Hugging Face id (only a local folder is exported).
    """
    ref = find_model(model, root=root)
    row = _model_row(ref.model_id, root)
    path = Path(ref.path).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"{model!r} is a Hugging Face id, not a local model folder: nothing to export")
    head = model_head(path)  # trained: the folder keeps a record (a bare checkpoint has none)
    record = record_of(path)
    # the record as written, its references resolved (the card names base models by name)
    meta = {**record.to_dict(), **{k: v for k, v in (("base_model", head.base_model),
                                                     ("entry_encoder", head.entry_encoder)) if v}} if head.trained else {}
    local = str(model).startswith(("/", "~", ".")) or Path(model).exists()
    facts: ModelFacts = {"model_id": row["model_id"] if row else (path.name if local else str(model)), "path": path, "meta": meta, "row": row,
                         "metrics": [], "baseline": None, "pst": None, "dictionary": None}
    cat = Catalog(root, reader=True)
    if not cat.path.is_file():
        return facts
    ids = [facts["model_id"]] + ([row["model_id"]] if row else [])
    facts["metrics"] = cat.query(
        "SELECT task, setting, metric, value, n, pooling FROM metrics WHERE list_contains($ids, model_id) "
        "QUALIFY row_number() OVER (PARTITION BY task, setting, metric ORDER BY created_at DESC) = 1 "
        "ORDER BY task, setting, metric", {"ids": ids})
    facts["baseline"] = _baseline(cat, meta.get("base_model") or (row or {}).get("base_model"), path)
    run_id = row.get("run_id") if row else None
    if run_id:
        pst = cat.query("SELECT * FROM pst_runs WHERE run_id = ?", [run_id])
        facts["pst"] = pst[0] if pst else None
    name = (facts["pst"] or {}).get("dictionary") or meta.get("dictionary") or (meta.get("config") or {}).get("dictionary")
    if name:
        d = cat.query("SELECT name, variant, sources, entries, definitions, train, dev, test FROM dictionaries "
                      "WHERE name = ? OR artifact_key = ?", [name, name])
        facts["dictionary"] = d[0] if d else None
    return facts


def _baseline(cat: Catalog, base: str | None, path: Path) -> dict[str, Any] | None:
    """The untrained base model's figures, filed under any of its ids (``base:<name>``, the ids of
    its folder): ``{"model_id", "metrics"}``, or None (no base recorded, or the model is its own base)."""
    if not base:
        return None
    try:
        base_path = Path(resolve_model_path(base)).resolve()
    except (OSError, ValueError):
        base_path = None
    if base_path == path.resolve():
        return None
    ids = [base_model_id(base)]
    if base_path is not None:  # PST's step-0 id of the same folder (base-<hash>)
        ids += [r["model_id"] for r in cat.query("SELECT model_id FROM models WHERE path = ?", [cat.rel(base_path)])]
    metrics = cat.query(
        "SELECT task, setting, metric, value, n, pooling FROM metrics WHERE list_contains($ids, model_id) "
        "QUALIFY row_number() OVER (PARTITION BY task, setting, metric ORDER BY created_at DESC) = 1 "
        "ORDER BY task, setting, metric", {"ids": ids})
    return {"model_id": ids[0], "metrics": metrics} if metrics else None


def export_model(model: str, dest: str | os.PathLike, *, root: str | os.PathLike | None = None,
                 max_seq_length: int = EVAL_MAX_LENGTH) -> Path:
    """Write ``model`` to ``dest`` as a sentence-transformers folder with a model card.

    Raises:
        ValueError: a pooling sentence-transformers has no module for (prompt, SBERT-WK), one line.
        OutputRefusedError: ``dest`` is not a new folder or an earlier export (see storage.outputs).
    """
    facts = model_facts(model, root=root)
    src = Path(require_safetensors(str(facts["path"])))
    pooling = str(facts["meta"].get("pooling") or (facts["row"] or {}).get("pooling") or model_head(facts["path"]).pooling)
    try:
        st_pooling_mode(pooling)
    except ValueError as exc:
        raise ValueError(f"{model}: {exc}") from None
    normalize = normalizes(facts["path"])  # as `defsentflow encode` does by default
    limit = _max_positions(src)
    length = min(max_seq_length, limit) if limit else max_seq_length
    with output_dir(dest, command="export model", root=root) as tmp:
        for f in sorted(src.iterdir()):
            if f.is_file() and not f.name.startswith(".") and f.name not in _REWRITTEN:
                shutil.copyfile(f, tmp / f.name)
        write_st_modules(tmp, pooling=pooling, max_seq_length=length, normalize=normalize)
        named = {k: base_name(str(facts["meta"][k])) for k in ("base_model", "entry_encoder") if facts["meta"].get(k)}
        info = portable({**facts["meta"], **named, "pooling": pooling, "max_seq_length": length, "normalize": normalize,
                         "model_id": facts["model_id"]})
        info.pop("losses", None)  # hundreds of numbers; the card gives the final loss
        write_model_record(tmp, info)
        (tmp / "README.md").write_text(model_card(facts, pooling=pooling, max_seq_length=length, normalize=normalize))
        make_readable(tmp)
    return Path(dest)


def _max_positions(model_dir: Path) -> int | None:
    try:
        value = json.loads((model_dir / "config.json").read_text()).get("max_position_embeddings")
    except (OSError, ValueError):
        return None
    return int(value) if isinstance(value, int) and value > 0 else None
