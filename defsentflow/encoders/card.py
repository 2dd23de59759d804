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
from defsentflow.eval_tasks import AVERAGE_TASK, DICTIONARY_TASKS, task_parts, without_head

__all__ = ["CITATIONS", "DATA_LICENCES", "base_licence", "base_name", "card_header", "headline_metrics", "is_figure",
           "markdown_table", "metric_rows", "model_card", "model_index", "source_licences"]

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


def is_figure(m: dict[str, Any]) -> bool:
    """A metric row a card shows: a measured figure, not a count beside it (``n_tied``), a chance
    level or a secondary top-k accuracy."""
    name = str(m["metric"])
    return name not in _SECONDARY and not name.startswith(("n_", "chance")) and name != "n"


def _key(m: dict[str, Any]) -> tuple[str, str, str]:
    return str(m["task"]), str(m["setting"]), str(m["metric"])


def _value(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}" if abs(value) > 1.5 else f"{value:.4f}"


def _delta(value: float | None, base: float | None) -> str:
    if value is None or base is None:
        return ""
    return f"{value - base:+.2f}" if max(abs(value), abs(base)) > 1.5 else f"{value - base:+.4f}"


def headline_metrics(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The three figures a reader wants first: STS-B dev (what selection reads), the STS test figure
    (the STS average where measured, else SICK-R, else STS-B test) and the reverse dictionary's test
    MRR (unseen queries) in the mode with the best dev MRR, as ``revdict --mode auto`` chooses."""
    rows = [(task_parts(str(m["task"])), m) for m in metrics if is_figure(m)]

    def first(test: Any) -> list[dict[str, Any]]:
        return next(([m] for p, m in rows if test(p, m)), [])

    out = first(lambda p, m: p.family == "stsb" and p.split == "dev" and m["metric"] == "spearman")
    out += (first(lambda p, m: p.family == AVERAGE_TASK and m["metric"] == "spearman")
            or first(lambda p, m: p.family == "sickr" and p.split != "dev" and m["metric"] == "spearman")
            or first(lambda p, m: p.family == "stsb" and p.split == "test" and m["metric"] == "spearman"))
    revdict = [(p, m) for p, m in rows if p.family == "revdict" and p.protocol == "unseen" and m["metric"] == "mrr"]
    dev = [(float(m["value"]), p.variant, m["setting"]) for p, m in revdict if p.split == "dev"]
    if dev:
        _, variant, mode = max(dev, key=lambda d: d[0])
        out += [m for p, m in revdict if p.split == "test" and p.variant == variant and m["setting"] == mode][:1]
    return out


def metric_rows(metrics: list[dict[str, Any]], baseline: list[dict[str, Any]] | None = None) -> list[tuple[str, ...]]:
    """(task, split, protocol, metric, value[, untrained, difference]) rows, dev first (the selection
    figures), then test; with ``baseline`` (the untrained base model's metrics) its figure beside each."""
    # a head figure scored with the run's head stands beside the model's own (eval_tasks.without_head)
    ranked = sorted(baseline or [], key=lambda m: without_head(str(m["task"])) != str(m["task"]))
    base = {(without_head(str(m["task"])), str(m["setting"]), str(m["metric"])): float(m["value"]) for m in ranked}
    rows = []
    for m in metrics:
        if not is_figure(m):
            continue
        split, proto = _split_protocol(str(m["task"]), str(m["setting"]))
        value = float(m["value"])
        row: tuple[str, ...] = (str(m["task"]), _SPLIT_NOTE.get(split, split), proto, str(m["metric"]), _value(value))
        if baseline is not None:
            row += (_value(base.get(_key(m))), _delta(value, base.get(_key(m))))
        rows.append(row)
    order = {"dev (selection)": 0}
    return sorted(rows, key=lambda r: (order.get(r[1], 1), r[0], r[2], r[3]))


def model_index(name: str, metrics: list[dict[str, Any]], dictionary: str | None) -> list[dict[str, Any]]:
    """The card header's ``model-index`` (Hugging Face's evaluation results): one result per task and
    setting, with the measured values as the catalog has them (STS Spearman x100, MRR as a fraction)."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for m in metrics:
        if not is_figure(m) or m["task"] == "avg":
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
                        # a local dataset, named without a slash: never mistaken for a Hub dataset id
                        "type": f"local-{dictionary or 'dictionary'}" if dictionary_task else task.split("-")[0],
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
    month = aug,
    year = "2021",
    address = "Online",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2021.acl-short.52/",
    doi = "10.18653/v1/2021.acl-short.52",
    pages = "411--418",
}""",
    "defsent_plus": """@misc{liu-2024-defsentplus,
    title = "{D}ef{S}ent+: Improving sentence embeddings of language models by projecting definition sentences into a quasi-isotropic or isotropic vector space of unlimited dictionary entries",
    author = "Liu, Xiaodong",
    year = "2024",
    eprint = "2405.16153",
    archivePrefix = "arXiv",
    primaryClass = "cs.CL",
    doi = "10.48550/arXiv.2405.16153",
    url = "https://arxiv.org/abs/2405.16153",
}""",
    "sbert": """@inproceedings{reimers-gurevych-2019-sentence,
    title = "Sentence-{BERT}: Sentence Embeddings using {S}iamese {BERT}-Networks",
    author = "Reimers, Nils and Gurevych, Iryna",
    booktitle = "Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing and the 9th International Joint Conference on Natural Language Processing (EMNLP-IJCNLP)",
    month = nov,
    year = "2019",
    address = "Hong Kong, China",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/D19-1410/",
    doi = "10.18653/v1/D19-1410",
    pages = "3982--3992",
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
        "pipeline_tag": "sentence-similarity",  # no `datasets:`: it names Hub datasets, and the dictionary is none
        "license": licence or "other", **({} if licence else {"license_name": "see-the-licences-section"}),
        "language": ["en"], "model-index": model_index(str(facts["model_id"]), facts["metrics"], dictionary)})
    what = {"defsent": "DefSent", "defsent_plus": "DefSent+", "pst": "DefSent+ (PST)"}.get(method, method)
    title = (f"{what} sentence encoder from {base_name(base) or 'its base model'}" + (f" on `{dictionary}`" if dictionary else "")
             if trained else f"{base_name(base)}, as defsentflow evaluates it")
    lines = [header, f"# {title}", "", f"defsentflow model id: `{facts['model_id']}`", "",
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
        baseline = facts.get("baseline")
        base_metrics = baseline["metrics"] if baseline else None
        base = {_key(m): float(m["value"]) for m in base_metrics or []}
        beside = [f"untrained ({baseline['model_id']})", "difference"] if baseline else []
        lines += ["Dev figures chose the model; test figures were never used for a choice."
                  + (f" Beside each, the untrained base model `{baseline['model_id']}` on the same data." if baseline
                     else ""), ""]
        head = []
        for m in headline_metrics(facts["metrics"]):
            split, what = _split_protocol(str(m["task"]), str(m["setting"]))
            value = float(m["value"])
            head.append((what, _SPLIT_NOTE.get(split, split), str(m["metric"]), _value(value),
                         *((_value(base.get(_key(m))), _delta(value, base.get(_key(m)))) if baseline else ())))
        if head:
            lines += ["### Headline", ""] + markdown_table(["figure", "split", "metric", "value", *beside], head)
            lines += ["", "### Every figure", ""]
        lines += markdown_table(["task", "split", "protocol", "metric", "value", *beside],
                                metric_rows(facts["metrics"], base_metrics)) + [""]
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
