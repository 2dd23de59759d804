"""``defsentflow encode`` (sentences -> Parquet of vectors) and ``defsentflow revdict`` (definition -> entries)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

MAX_SENTENCE_CHARS = 20_000  # one input sentence (a line of .txt, a record's field); the model truncates far sooner
MAX_QUERY_CHARS = 2_000  # one reverse-dictionary definition


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("encode", help="encode sentences into a Parquet file of vectors",
                       description="Encode one sentence per line (.txt), a JSONL/CSV/TSV field or a Parquet column "
                                   "into FILE.parquet with columns text and embedding (fixed-size float32 list).")
    p.add_argument("model", help="model directory, Hugging Face id or 'minilm' (the bundled MiniLM)")
    p.add_argument("--input", required=True, help="sentences: .txt (one per line), .jsonl, .csv, .tsv or .parquet")
    p.add_argument("--out", required=True, help="output .parquet file (written atomically)")
    p.add_argument("--field", default="text",
                   help="field/column holding the sentence for jsonl/csv/tsv/parquet (default: text)")
    p.add_argument("--pooling", default=None,
                   help="cls, mean, max, prompt or sbert_wk (default: the model's training pooling, else mean)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--max-length", type=int, default=256,
                   help="tokens per text (default 256: the STS evaluation's and the exported model's length)")
    p.add_argument("--autocast", default="none", choices=["none", "bf16", "fp16"])
    p.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                   help="L2-normalise the vectors (default: as `defsentflow export model` writes this model, so both "
                        "give the same vectors: normalised when its base model normalises, as all-MiniLM-L6-v2 does)")
    p.add_argument("--device", default="auto")
    p.add_argument("--cache", action="store_true", help="use the data root's embedding cache")
    p.set_defaults(func=_encode)

    p = sub.add_parser("revdict", help="reverse dictionary: the entries that best match a definition",
                       description="Print the top-k entries for a definition, from a faiss index over the entry "
                                   "embeddings of a dictionary dataset (built once, then cached).")
    p.add_argument("model", help="model directory, Hugging Face id or 'minilm'")
    p.add_argument("definition", nargs="+", help="one or more definitions (quote each)")
    p.add_argument("--dictionary", default=None,
                   help="dictionary dataset to search (default: the one the model was trained on, else 'sample')")
    p.add_argument("-k", type=int, default=10, help="how many entries to print (default 10)")
    p.add_argument("--mode", default="auto", choices=["auto", "head", "cosine", "hybrid"],
                   help="head: the training-time output against the frozen entry space; cosine: pooled vectors, "
                        "normalised; hybrid: cosine entry vectors plus the headword's own vector (auto: the mode "
                        "with the best measured revdict MRR for the model, else head for DefSent+/PST models)")
    p.add_argument("--pooling", default=None, help="override the model's pooling")
    p.add_argument("--device", default="auto")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached index")
    p.add_argument("--index", choices=("flat", "ivf", "hnsw"), default="flat",
                   help="flat: exact search; ivf/hnsw: approximate, tuned to recall@10 >= 0.995 vs exact (large dictionaries)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_revdict)

    p = sub.add_parser("revdict-add", help="add entries to a model's reverse-dictionary index without retraining",
                       description="Encode only the definitions of FILE (JSONL {entry, definition} or TSV "
                                   "entry<TAB>definition) and add them to the index of MODEL over --dictionary; later "
                                   "`defsentflow revdict` look-ups of this model, dictionary and mode include them.")
    p.add_argument("model", help="model directory, Hugging Face id or 'minilm'")
    p.add_argument("file", help="entries to add")
    p.add_argument("--dictionary", default=None,
                   help="the indexed dictionary dataset (default: the one the model was trained on, else 'sample')")
    p.add_argument("--mode", default="auto", choices=["auto", "head", "cosine", "hybrid"])
    p.add_argument("--pooling", default=None, help="override the model's pooling")
    p.add_argument("--device", default="auto")
    p.set_defaults(func=_revdict_add)


def read_sentences(path: Path, field: str) -> list[str]:
    """Sentences from a text/JSONL/CSV/TSV/Parquet file; a bad record is an error naming file and line."""
    from defsentflow.cli import UserError

    if not path.is_file():
        raise UserError(f"input not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        if field not in table.column_names:
            raise UserError(f"{path}: no column {field!r} (columns: {table.column_names})")
        texts = table.column(field).to_pylist()
        bad = next((i for i, t in enumerate(texts) if not isinstance(t, str) or not t.strip()), None)
        if bad is not None:
            raise UserError(f"{path}: row {bad}: {field!r} is empty or not a string")
        _bound_lengths(path, texts, "row", 0)
        return texts
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise UserError(f"{path}:{line}: not valid UTF-8") from None
    lines = raw.splitlines()
    if suffix == ".jsonl":
        texts = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}:{n}: invalid JSON: {exc.msg}") from None
            if not isinstance(rec, dict) or not isinstance(rec.get(field), str) or not rec[field].strip():
                raise UserError(f"{path}:{n}: no non-empty string field {field!r}")
            texts.append(rec[field])
        _bound_lengths(path, texts, "line", 1)
        return texts
    if suffix in (".csv", ".tsv"):
        import csv

        reader = csv.DictReader(lines, delimiter="\t" if suffix == ".tsv" else ",")
        if reader.fieldnames is None or field not in reader.fieldnames:
            raise UserError(f"{path}:1: header has no column {field!r} (columns: {reader.fieldnames})")
        texts = []
        for n, rec in enumerate(reader, 2):
            if not (rec.get(field) or "").strip():
                raise UserError(f"{path}:{n}: empty {field!r}")
            texts.append(rec[field])
        _bound_lengths(path, texts, "record", 1)
        return texts
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_SENTENCE_CHARS:
            raise UserError(f"{path}:{n}: line has {len(line)} characters (limit {MAX_SENTENCE_CHARS})")
    return [line for line in lines if line.strip()]


def _bound_lengths(path: Path, texts: list[str], unit: str, first: int) -> None:
    from defsentflow.cli import UserError

    for n, text in enumerate(texts, first):
        if len(text) > MAX_SENTENCE_CHARS:
            raise UserError(f"{path}: {unit} {n}: sentence has {len(text)} characters (limit {MAX_SENTENCE_CHARS})")


def _encode(args: argparse.Namespace) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from defsentflow.cli import UserError, check_count
    from defsentflow.config_tools import LIMITS
    from defsentflow.encoders import encode_texts, load_encoder, validate_pooling
    from defsentflow.encoders.finite import require_finite
    from defsentflow.encoders.loading import resolve_model_path
    from defsentflow.model import model_head
    from defsentflow.storage.outputs import check_output, output_file, parquet_output_metadata

    check_count(args.batch_size, "--batch-size", LIMITS["batch"])
    check_count(args.max_length, "--max-length", LIMITS["tokens"])
    out = Path(args.out)
    if out.suffix.lower() != ".parquet":
        raise UserError(f"--out must be a .parquet file, got {out}")
    check_output(out, command="encode", kind="file")  # a foreign file or the data root: refused before any work
    texts = read_sentences(Path(args.input), args.field)
    if not texts:
        raise UserError(f"{args.input}: no sentences")
    args.model = _catalog_model(args.model)  # an id from `defsentflow leaderboard`, a folder, minilm, a cached hub id
    head = model_head(resolve_model_path(args.model), pooling=args.pooling)
    pooling = head.pooling
    try:
        validate_pooling(pooling)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.normalize is None:
        from defsentflow.model.export import normalizes

        args.normalize = normalizes(args.model, head)
    t0 = time.perf_counter()
    enc = load_encoder(args.model, device=args.device)
    t1 = time.perf_counter()
    vecs = encode_texts(enc, texts, pooling=pooling, batch_size=args.batch_size, max_length=args.max_length,
                        autocast=args.autocast, normalize=args.normalize, cache=args.cache)
    encoding = time.perf_counter() - t1
    require_finite(vecs, model=str(args.model), what="sentence vectors")
    dim = int(vecs.shape[1])
    schema = pa.schema([pa.field("text", pa.string(), nullable=False),
                        pa.field("embedding", pa.list_(pa.float32(), dim), nullable=False)],
                       metadata={"model": str(args.model), "pooling": pooling, "normalized": str(args.normalize),
                                 **parquet_output_metadata("encode")})
    flat = pa.array(np.ascontiguousarray(vecs, dtype=np.float32).ravel(), pa.float32())
    table = pa.Table.from_arrays([pa.array(texts, pa.string()), pa.FixedSizeListArray.from_arrays(flat, dim)],
                                 schema=schema)
    with output_file(out, command="encode") as tmp:
        pq.write_table(table, tmp, compression="zstd")
    secs = time.perf_counter() - t0
    print(f"wrote {len(texts)} vectors ({dim} dims, {pooling} pooling) to {out} in {secs:.1f}s "
          f"(encoding {len(texts) / max(encoding, 1e-9):,.0f} sentences/s; loading the model {t1 - t0:.1f}s)")
    return 0


def read_entries(path: Path) -> pa.Table:
    """(entry, definition) rows of a JSONL or TSV file; a bad line is an error naming the file and line."""
    import pyarrow as pa

    from defsentflow.cli import UserError
    from defsentflow.dictionary.jsonl import read_jsonl
    from defsentflow.dictionary.records import RejectedRecord
    from defsentflow.dictionary.tsv import read_tsv
    from defsentflow.dictionary.validate import check_record

    if not path.is_file():
        raise UserError(f"file not found: {path}")
    reader = read_tsv if path.suffix.lower() in (".tsv", ".txt") else read_jsonl
    entries, definitions = [], []
    for rec in reader(path):
        if not isinstance(rec, RejectedRecord):  # the ingest quarantine's rules: NUL, bidi controls, length
            rec = check_record(rec) or rec
        if isinstance(rec, RejectedRecord):
            raise UserError(f"{rec.file}:{rec.line}: {rec.reason}: {rec.detail}")
        entries.append(rec.entry)
        definitions.append(rec.definition)
    if not entries:
        raise UserError(f"{path}: no entries")
    return pa.table({"entry": entries, "definition": definitions})


def _catalog_model(model: str) -> str:
    """What loads ``model`` (a catalog id or alias, a bundled name, a folder, a cached hub id), by the
    one model lookup: ``unknown model 'x'; newest ids: ...`` otherwise, never a hub error."""
    from defsentflow.model.lookup import find_model

    return find_model(model).path


def _revdict(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError, check_count
    from defsentflow.cli.table import print_table
    from defsentflow.dictionary.tables import load_dictionary_table
    from defsentflow.dictionary.validate import check_text
    from defsentflow.encoders.loading import resolve_model_path
    from defsentflow.model import record_of
    from defsentflow.revdict import build_revdict_index
    from defsentflow.revdict.senses import SenseMatcher, definitions_by_entry, stored_vectors

    check_count(args.k, "-k", 1000)
    for n, d in enumerate(args.definition, 1):
        if bad := check_text(d, f"definition {n}", MAX_QUERY_CHARS):
            raise UserError(f"{bad[1]}: nothing to look up" if bad[0] in ("empty", "whitespace_only") else bad[1])
    args.model = _catalog_model(args.model)
    dictionary = args.dictionary or record_of(resolve_model_path(args.model)).dictionary or "sample"
    try:
        index = build_revdict_index(args.model, dictionary, mode=args.mode, pooling=args.pooling, device=args.device,
                                    rebuild=args.rebuild, index_kind=args.index)
    except (KeyError, LookupError) as exc:
        raise UserError(f"dictionary {dictionary!r}: {exc}") from None
    results = index.search(args.definition, k=args.k, device=args.device)  # NonFiniteError: a corrupt model
    senses = SenseMatcher(lambda texts: index.query_vectors(texts, device=args.device),
                          definitions_by_entry(load_dictionary_table(dictionary)), stored=stored_vectors(index)).match(
        index.query_vectors(args.definition, device=args.device), [[e for e, _ in hits] for hits in results])
    if args.json:
        print(json.dumps([{"definition": d, "entries": [
            {"entry": e, "score": s, "definition": m.definition if m else None,
             "definition_score": m.score if m else None} for (e, s), m in zip(hits, found)]}
            for d, hits, found in zip(args.definition, results, senses)], indent=2))
        return 0
    for d, hits, found in zip(args.definition, results, senses):
        print(f"{d!r}  ({index.meta['mode']} mode, {index.meta['n_entries']} entries of {dictionary!r}; the matched "
              "definition: the entry's nearest to the query, with its cosine)")
        print_table(["rank", "entry", "score", "matched definition", "cosine"],
                    [(i + 1, e, f"{s:.4f}", _clip(m.definition) if m else "", f"{m.score:.3f}" if m else "")
                     for i, ((e, s), m) in enumerate(zip(hits, found))])
        print()
    return 0


def _clip(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 3].rstrip() + "..."


def _revdict_add(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.encoders.loading import resolve_model_path
    from defsentflow.model import record_of
    from defsentflow.revdict import build_revdict_index

    rows = read_entries(Path(args.file))
    args.model = _catalog_model(args.model)
    dictionary = args.dictionary or record_of(resolve_model_path(args.model)).dictionary or "sample"
    try:
        index = build_revdict_index(args.model, dictionary, mode=args.mode, pooling=args.pooling, device=args.device)
    except (KeyError, LookupError) as exc:
        raise UserError(f"dictionary {dictionary!r}: {exc}") from None
    before = len(index.entries)
    index = index.add(rows, device=args.device)
    print(f"added {rows.num_rows} definitions from {args.file}: {len(index.entries) - before} new entries, "
          f"{len(index.entries)} in all ({index.meta['mode']} mode index {index.path})")
    return 0
