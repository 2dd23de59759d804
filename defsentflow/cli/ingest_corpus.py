"""``defsentflow ingest corpus``: registered by ``defsentflow.cli.ingest`` via :func:`register_corpus`."""

from __future__ import annotations

import argparse

from defsentflow.cli import identifier

__all__ = ["register_corpus"]

_FORMATS = ("auto", "text", "jsonl", "parquet")
_INDEX_KINDS = ("bm25", "tfidf")


def register_corpus(ingest_subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``corpus`` sub-command to the ``ingest`` group's sub-parsers."""
    p = ingest_subparsers.add_parser(
        "corpus", help="ingest raw text (text files, JSONL, Parquet) as sentences and chunks",
        description="Read documents, strip Gutenberg headers, split paragraphs and sentences (pysbd), cut chunks, "
                    "write Parquet under the data root and register the corpus. Same inputs again: cache hit.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="directories or files")
    p.add_argument("--name", required=True, type=identifier("corpus name"), help="corpus name, e.g. bbc")
    p.add_argument("--format", dest="fmt", default="auto", choices=_FORMATS,
                   help="input format (auto: by file suffix; .txt text, .jsonl, .parquet)")
    p.add_argument("--chunk-sentences", type=int, default=8, help="most sentences per chunk (default 8)")
    p.add_argument("--workers", type=int, default=None, help="sentence-splitting processes (default 2)")
    p.add_argument("--index", action="append", default=[], choices=_INDEX_KINDS,
                   help="also build this retrieval index over the chunks (repeatable)")
    p.set_defaults(func=_ingest_corpus)
    return p


def _ingest_corpus(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError
    from defsentflow.cli.table import print_table
    from defsentflow.corpus.ingest import ingest_corpus
    from defsentflow.retrieval import build_index

    if args.chunk_sentences < 1:
        raise UserError(f"--chunk-sentences must be >= 1, got {args.chunk_sentences}")
    from defsentflow.cli import check_count
    from defsentflow.config_tools import LIMITS

    check_count(args.chunk_sentences, "--chunk-sentences", LIMITS["count"])
    check_count(args.workers, "--workers", LIMITS["workers"])
    try:
        res = ingest_corpus(args.paths, args.name, fmt=args.fmt, chunk_sentences=args.chunk_sentences, workers=args.workers)
    except (FileNotFoundError, PermissionError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    cols = ["corpus", "documents", "paragraphs", "sentences", "chunks", "quarantined", "repaired", "status", "seconds"]
    print_table(cols, [[res.name, res.documents, res.paragraphs, res.sentences, res.chunks, res.quarantined, res.repaired,
                        "cached" if res.cached else "built", round(res.seconds, 1)]])
    print(f"artifact {res.key}: {res.path}")
    if res.quarantined or res.repaired:
        print(f"quarantine: defsentflow sql \"SELECT file, line, reason FROM quarantine WHERE dataset = '{res.name}'\"")
    for kind in dict.fromkeys(args.index):
        art = build_index(kind, res.key)
        print(f"index {kind}: {'cached' if art.cached else 'built'} {art.key} ({art.documents} chunks, {art.seconds:.1f}s)")
    return 0
