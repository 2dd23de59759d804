"""Model cards (``README.md``) in the Hugging Face convention: a YAML header, then prose.

Everything in a card comes from the model's ``defsentflow.json`` and the catalog; no absolute
path is written (only last path components).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from defsentflow.encoders.loading import resolve_model_path
from defsentflow.eval_tasks import AVERAGE_TASK, DICTIONARY_TASKS, task_parts

__all__ = ["CITATIONS", "DATA_LICENCES", "base_licence", "base_name", "card_header", "markdown_table", "metric_rows",
           "model_card", "model_index", "source_licences"]

# Licences of the data sources a dictionary is read from (reader kind -> licence).
DATA_LICENCES = {"oewn": "CC BY 4.0 (Open English WordNet)", "oxford": "the Oxford dictionary data's own terms",
                 "tsv": "the licence of the TSV file you ingested", "jsonl": "the licence of the JSONL file you ingested",
                 "lines": "the licence of the text file you ingested"}

# Left out of the card's table (all figures stay in the catalog's `metrics`).
_SECONDARY = ("top3", "top10")

_SPLIT_NOTE = {"dev": "dev (selection)", "test": "test (reported)", "trial": "trial (labelled stand-in for test)"}


def source_licences(sources: list[dict]) -> list[str]:
    """One line per source: the licence file beside it (its title), else what its reader kind implies."""
    out = []
    for s in sources:
        if not isinstance(s, dict):
            continue
        kind, paths = str(s.get("kind")), [Path(p) for p in s.get("paths") or []]
        text = DATA_LICENCES.get(kind, "see the source")
        for p in paths[:1]:
            folder = p if p.is_dir() else p.parent
            lic = next((f for f in (folder / "LICENSE.md", folder.parent / "LICENSE.md", folder / "LICENSE") if f.is_file()), None)
            if lic is not None:
                body = lic.read_text(errors="replace")
                names = [n for n in ("CC BY 4.0", "CC BY-SA 4.0", "CC BY-NC-SA 3.0", "CC0", "WordNet License")
                         if n.lower() in body.lower()]
                text = f"{', '.join(names) or 'see the licence'} (the {lic.name} beside {paths[0].name})"
        out.append(f"{s.get('name') or kind}: {text}")
    return out or ["see the dictionary's sources"]


def card_header(fields: dict[str, Any]) -> str:
    return "---\n" + yaml.safe_dump({k: v for k, v in fields.items() if v not in (None, [], "")},
                                    sort_keys=False, allow_unicode=True) + "---\n"


def base_licence(base_model: str | None) -> str | None:
    """The ``license:`` of the base model's own card, when it is a local folder with one."""
    if not base_model:
        return None

    readme = Path(resolve_model_path(base_model)) / "README.md"
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8", errors="replace")
    if text.startswith("---"):
        try:
            head = yaml.safe_load(text.split("---", 2)[1]) or {}
        except yaml.YAMLError:
            return None
        return str(head.get("license")) if head.get("license") else None
    return None


def base_name(base: str | None) -> str | None:
    """A portable name for the base model: the hub id of the bundled MiniLM, else the id or folder name."""
    if not base:
        return None

    try:
        bundled = Path(resolve_model_path("minilm")).resolve()
    except FileNotFoundError:
        bundled = None
    if bundled is not None and Path(resolve_model_path(base)).resolve() == bundled:
        return "sentence-transformers/all-MiniLM-L6-v2"
    return Path(base).name if base.startswith(("/", "~", ".")) else base


def _split_protocol(task: str, setting: str) -> tuple[str, str]:
    """(split, protocol) of a catalog metric row, for the card's table (the task registry's parse)."""
    parts = task_parts(task)
    variant = f" ({', '.join(parts.variant)})" if parts.variant else ""
    if parts.family in DICTIONARY_TASKS:
        return parts.split, f"{parts.family} {parts.protocol} queries, {setting} mode{variant}"
    if parts.family == AVERAGE_TASK:
        return "test", f"mean of the STS tasks (Spearman x100){variant}"
    if parts.family in ("stsb", "sickr") and parts.split != "test":
        return parts.split, f"{'STS-B' if parts.family == 'stsb' else 'SICK-R'} {parts.split}, {setting} pairs{variant}"
    return "test", f"{task}, {setting} pairs (Spearman x100)"


def metric_rows(metrics: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    """(task, split, protocol, metric, value) rows; dev first (the selection figures), then test."""
    rows = []
    for m in metrics:
        if m["metric"] in _SECONDARY:
            continue
        split, proto = _split_protocol(str(m["task"]), str(m["setting"]))
        value = float(m["value"])
        rows.append((str(m["task"]), _SPLIT_NOTE.get(split, split), proto, str(m["metric"]),
                     f"{value:.2f}" if abs(value) > 1.5 else f"{value:.4f}"))
    order = {"dev (selection)": 0}
    return sorted(rows, key=lambda r: (order.get(r[1], 1), r[0], r[2], r[3]))


def model_index(name: str, metrics: list[dict[str, Any]], dictionary: str | None) -> list[dict[str, Any]]:
    """The card header's ``model-index`` (Hugging Face's evaluation results): one result per task and
    setting, with the measured values as the catalog has them (STS Spearman x100, MRR as a fraction)."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for m in metrics:
        if m["metric"] in _SECONDARY or m["task"] == "avg":
            continue
        task, setting = str(m["task"]), str(m["setting"])
        split, protocol = _split_protocol(task, setting)
        dictionary_task = task.startswith(("revdict", "wordpred"))
        hf_split = {"dev": "validation"}.get(split, split)
        entry = results.setdefault((task, setting), {
            "task": ({"type": "text-retrieval", "name": "Reverse dictionary" if task.startswith("revdict")
                      else "Word prediction"} if dictionary_task
                     else {"type": "sentence-similarity", "name": "Semantic Textual Similarity"}),
            "dataset": {"name": f"{dictionary or 'dictionary'} ({protocol})" if dictionary_task else protocol,
                        "type": f"defsentflow/{dictionary or 'dictionary'}" if dictionary_task else task.split("-")[0],
                        "split": hf_split},
            "metrics": []})
        label = "Spearman x100" if m["metric"] == "spearman" else str(m["metric"]).upper()
        entry["metrics"].append({"type": str(m["metric"]), "value": round(float(m["value"]), 4), "name": label})
    return [{"name": name, "results": list(results.values())}] if results else []


CITATIONS = {
    "defsent": """@inproceedings{tsukagoshi-etal-2021-defsent,
    title = "{D}ef{S}ent: Sentence Embeddings using Definition Sentences",
    author = "Tsukagoshi, Hayato and Sasano, Ryohei and Takeda, Koichi",
    booktitle = "Proceedings of the 59th Annual Meeting of the Association for Computational Linguistics and the 11th International Joint Conference on Natural Language Processing (Volume 2: Short Papers)",
    year = "2021",
}""",
    "defsent_plus": """@misc{liu-2024-defsentplus,
    title = "{D}ef{S}ent+: Improving sentence embeddings of language models by projecting definition sentences into a quasi-isotropic or isotropic vector space of unlimited dictionary entries",
    author = "Liu, Xiaodong",
    year = "2024",
}""",
    "sbert": """@inproceedings{reimers-gurevych-2019-sentence,
    title = "Sentence-{BERT}: Sentence Embeddings using {S}iamese {BERT}-Networks",
    author = "Reimers, Nils and Gurevych, Iryna",
    booktitle = "Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing",
    year = "2019",
}""",
}


def _limitations(method: str, dic: dict[str, Any], trained: bool) -> list[str]:
    size = f"{dic.get('entries')} entries of the dictionary `{dic.get('name')}`" if dic else "one dictionary"
    lines = ["## Limitations", ""]
    if trained:
        lines += [f"- Trained with {method} on {size}, in English only; meanings, registers and domains the "
                  "dictionary lacks are not learnt.",
                  "- The figures above come from one run on small dev and test sets (see the `n` of each figure in the "
                  "catalog); a different seed or sample moves them. Dev figures chose this model, so only test figures "
                  "estimate how it generalises."]
    else:
        lines += ["- Not trained here: its limitations are its base model's."]
    lines += ["- Reverse-dictionary and word-prediction figures count only queries whose text the model never trained "
              "on; STS figures are Spearman correlations x100 on the named split.",
              "- Not evaluated for bias or for use outside sentence similarity and dictionary look-up.", ""]
    return lines


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) > 1.5 else f"{value:.4g}"
    return str(value)


def markdown_table(header: list[str], rows: list[tuple]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]


def model_card(facts: dict[str, Any], *, pooling: str, max_seq_length: int, normalize: bool) -> str:
    """The ``README.md`` of an exported model (see :func:`defsentflow.exports.model.model_facts`)."""
    meta, row, pst, dic = facts["meta"], facts["row"] or {}, facts["pst"] or {}, facts["dictionary"] or {}
    config = meta.get("config") or {}
    base = meta.get("base_model") or row.get("base_model") or (None if meta else str(facts["path"]))
    method = meta.get("method") or row.get("method") or "unknown"
    dictionary = dic.get("name") or pst.get("dictionary")
    sources = dic.get("sources") or []
    if isinstance(sources, str):
        sources = json.loads(sources)
    licence = base_licence(base)
    trained = bool(meta or row)
    header = card_header({
        "base_model": base_name(base), "library_name": "sentence-transformers",
        "tags": ["sentence-transformers", "sentence-similarity", "feature-extraction", "defsentflow"]
        + ([method] if trained else []),
        "datasets": [dictionary] if dictionary else [], "pipeline_tag": "sentence-similarity",
        "license": licence or "other", **({} if licence else {"license_name": "see-the-licences-section"}),
        "language": ["en"], "model-index": model_index(str(facts["model_id"]), facts["metrics"], dictionary)})
    title = facts["model_id"]
    lines = [header, f"# {title}", "",
             (f"A sentence encoder trained by defsentflow with **{method}** from `{base_name(base) or 'its base model'}`: "
              "definition sentences are mapped to the vectors of the words they define." if meta or row else
              f"`{base_name(base)}` exported by defsentflow as it is (not trained here), with the pooling and length "
              "defsentflow evaluates it with."), "",
             "## Training data", ""]
    if dic:
        lines += [f"Dictionary dataset `{dic.get('name')}` (variant {dic.get('variant')}): {dic.get('entries')} entries, "
                  f"{dic.get('definitions')} definitions; train {dic.get('train')}, dev {dic.get('dev')}, "
                  f"test {dic.get('test')} definitions, split by a hash of the entry (no entry in two splits).", ""]
    elif meta.get("n_examples"):
        lines += [f"{meta['n_examples']} training definitions.", ""]
    else:
        lines += ["Not recorded (the model was exported without a catalog entry).", ""]
    lines += ["## Method", ""]
    if pst:
        lines += [f"Progressive Separate Training (PST): {pst.get('steps_run')} step(s) run; step "
                  f"**{pst.get('winner_step')}** was selected by `{pst.get('selection_metric')}` on the dev split "
                  f"(score {_fmt(pst.get('selection_score'))}).", ""]
    lines += [f"Pooling: `{pooling}` over the last layer; `max_seq_length` {max_seq_length} (the evaluation's length); "
              f"{'L2-normalised output (Normalize, as the base model)' if normalize else 'no output normalisation'}; "
              "similarity: cosine.", ""]
    hyper = {k: config[k] for k in ("method", "epochs", "batch_size", "lr", "max_length", "temperature", "seed",
                                    "warmup_ratio", "use_pooler", "pooling", "entry_encoding") if k in config}
    if hyper or meta.get("steps"):
        lines += ["## Hyperparameters", ""]
        lines += markdown_table(["setting", "value"], [(k, _fmt(v)) for k, v in hyper.items()]
                        + [(k, _fmt(meta[k])) for k in ("steps", "final_loss", "n_targets") if k in meta])
        lines += [""]
    lines += ["## Evaluation", ""]
    if facts["metrics"]:
        lines += ["Dev figures chose the model; test figures were never used for a choice.", ""]
        lines += markdown_table(["task", "split", "protocol", "metric", "value"], metric_rows(facts["metrics"])) + [""]
    else:
        lines += ["No evaluation is recorded for this model in the catalog yet: `defsentflow export model MODEL DIR` "
                  "writes this card with the dev and test figures once it has been evaluated.", ""]
    lines += ["## Why this model", "",
              (str(pst.get("reason")) if pst.get("reason") else
               f"It is the encoder this {method} run produced; see the evaluation above." if meta or row else
               "The untrained baseline: compare it with the trained encoders."), "",
              "## Usage", "", "```python", "from sentence_transformers import SentenceTransformer", "",
              'model = SentenceTransformer("path/to/this/folder")',
              'vectors = model.encode(["a young dog", "a domestic animal that barks"])',
              "print(model.similarity(vectors, vectors))", "```", "",
              "## Licences", "",
              f"- Base model: {licence or 'see the base model card'}.",
              *[f"- Training data, {x}." for x in (source_licences(sources) if sources else ["see the dictionary's sources"])],
              "- STS/SICK evaluation data are used for evaluation only (SICK: CC BY-NC-SA 3.0).", ""]
    lines += _limitations(method, dic, trained)
    cited = ["defsent"] + (["defsent_plus"] if method in ("pst", "defsent_plus") or pst else []) + ["sbert"]
    lines += ["## Citation", "", "```bibtex", *("\n\n".join(CITATIONS[c] for c in cited).splitlines()), "```", ""]
    return "\n".join(lines)
