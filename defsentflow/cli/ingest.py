"""``defsentflow ingest ...``: bring dictionaries (and corpora) into the data root."""

from __future__ import annotations

import argparse

from defsentflow.cli import identifier
from defsentflow.cli.ingest_corpus import register_corpus

_KINDS = ("oewn", "oxford", "tsv", "jsonl", "wiktextract")

_DICTIONARY_EPILOG = """\
sources:
  --source KIND PATH [PATH ...]   KIND is one of oewn, oxford, tsv, jsonl, wiktextract. Repeat --source to merge
                                  several sources into one dataset, e.g.
    defsentflow ingest dictionary --name wn-extra \\
        --source oewn ../shared/data/oewn/yaml --source tsv extra.tsv more.tsv

  oewn    the yaml/ directory of Open English WordNet (entries-*.yaml + noun.*.yaml ...)
  oxford  Ishiwatari et al. lines: word%oxford.N<TAB>pos<TAB>source<TAB>definition<TAB>...
  tsv     entry<TAB>definition, optional header line "entry<TAB>definition[<TAB>meta ...]"
  jsonl   {"entry": ..., "definition": ...} per line; pos, synset, examples and other keys kept
  wiktextract  the kaikki.org JSONL of wiktextract, streamed; --lang-code (default en) picks the
          language; a sub-sense's last gloss is its definition; form-of/alt-of senses are skipped

variants (DefSent+): a = union of the sources, b = exactly one source,
  c = only entries that are one whole token of --tokenizer's vocabulary.
Splits: 8:1:1 by entry from a hash of (seed, entry): stable when entries are added.
Bad records (malformed, empty, whitespace-only, > 1000 characters, control characters, invalid
UTF-8) go to the quarantine table with file, line and reason; the summary shows
read = accepted + duplicates + excluded + quarantined. Unchanged sources: nothing is rewritten.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="ingest dictionaries or corpora into the data root")
    ingest_sub = p.add_subparsers(dest="ingest_command", required=True, metavar="WHAT")
    _register_dictionary(ingest_sub)
    register_corpus(ingest_sub)


def _register_dictionary(ingest_sub: argparse._SubParsersAction) -> None:
    p = ingest_sub.add_parser(
        "dictionary", help="read and merge dictionary sources into a named dataset",
        description="Read dictionary sources, merge them into one dataset, split it 8:1:1 by entry, write Parquet "
                    "under <data root>/parquet/dictionaries/ and load it into the catalog.",
        epilog=_DICTIONARY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--source", action="append", nargs="+", required=True, metavar=("KIND", "PATH"),
                   help="a source: its kind then one or more paths (repeatable; see below)")
    p.add_argument("--name", required=True, type=identifier("dataset name"), help="dataset name, e.g. oewn (letters, digits, . _ -)")
    p.add_argument("--variant", default="a", choices=("a", "b", "c"), help="DefSent+ variant (default a)")
    p.add_argument("--tokenizer", metavar="NAME_OR_PATH", help="tokenizer for variant c (AutoTokenizer)")
    p.add_argument("--seed", type=int, default=0, help="split seed (default 0)")
    p.add_argument("--split-by", choices=("entry", "gloss"), default="entry",
                   help="entry: an entry's definitions share a split; gloss: a definition text shares a split under "
                        "every entry (WordNet: by synset; no test gloss is trained under another lemma)")
    p.add_argument("--case-fold", action=argparse.BooleanOptionalAction, default=True,
                   help="lower-case entries so 'Dog' and 'dog' are one entry (default: on)")
    p.add_argument("--max-chars", type=int, default=1000, help="longer entries/definitions are quarantined (default 1000)")
    p.add_argument("--workers", type=int, default=2, help="processes parsing OEWN YAML (default 2)")
    p.add_argument("--lang-code", default=None, help="wiktextract sources: the language read (default en)")
    p.set_defaults(func=_ingest_dictionary)


def _params(args: argparse.Namespace):
    from pydantic import ValidationError

    from defsentflow.cli import UserError
    from defsentflow.dictionary import DictionaryConfig

    sources = []
    for group in args.source:
        if len(group) < 2:
            raise UserError(f"--source {' '.join(group)}: give a kind and at least one path (--source KIND PATH ...)")
        if group[0] not in _KINDS:
            raise UserError(f"--source: unknown kind {group[0]!r}; choose one of: {', '.join(_KINDS)}")
        lang = {"lang_code": args.lang_code} if group[0] == "wiktextract" and args.lang_code else {}
        sources.append({"kind": group[0], "paths": group[1:], **lang})
    try:
        return DictionaryConfig(name=args.name, sources=sources, variant=args.variant, tokenizer=args.tokenizer,
                                seed=args.seed, split_by=args.split_by, case_fold=args.case_fold, max_chars=args.max_chars,
                                workers=args.workers)
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'parameters'}: {e['msg']}" for e in exc.errors())
        raise UserError(errors) from None


def _ingest_dictionary(args: argparse.Namespace) -> int:
    from defsentflow.cli import UserError, check_count
    from defsentflow.config_tools import LIMITS
    from defsentflow.dictionary import ingest_dictionary

    check_count(args.workers, "--workers", LIMITS["workers"])
    check_count(args.max_chars, "--max-chars", LIMITS["count"])
    check_count(args.seed, "--seed", LIMITS["seed"], minimum=0)
    params = _params(args)
    try:
        result = ingest_dictionary(params)
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    print_summary(result.name, result.status, result.key, str(result.path), result.summary, result.seconds)
    return 0


def print_summary(name: str, status: str, key: str, path: str, s: dict, seconds: float) -> None:
    """The ingest summary: per-source accounting, quarantine reasons, sizes and splits."""
    from defsentflow.cli.table import print_table

    cols = ["source", "kind", "read", "accepted", "duplicates", "excluded", "quarantined"]
    rows = [[x["name"], x["kind"], x["read"], x["accepted"], x["duplicates"], x["excluded"], x["quarantined"]]
            for x in s["sources"]]
    rows.append(["total", "", s["read"], s["accepted"], s["duplicates"], s["excluded"], s["quarantined"]])
    print_table(cols, rows)
    balanced = s["read"] == s["accepted"] + s["duplicates"] + s["excluded"] + s["quarantined"]
    print(f"read {s['read']} = accepted {s['accepted']} + duplicates {s['duplicates']} + excluded {s['excluded']} "
          f"+ quarantined {s['quarantined']}" + ("" if balanced else "  (UNBALANCED)"))
    if s["reasons"]:
        print("quarantine: " + ", ".join(f"{r} {n}" for r, n in s["reasons"].items())
              + (f" (incl. {s['examples_quarantined']} examples)" if s["examples_quarantined"] else "")
              + f"; see: defsentflow sql \"SELECT file, line, reason, detail FROM quarantine WHERE dataset = '{name}'\"")
    print()
    total = max(s["definitions"], 1)
    print_table(["split", "entries", "definitions", "share"],
                [[k, v["entries"], v["definitions"], f"{100 * v['definitions'] / total:.1f}%"] for k, v in s["splits"].items()]
                + [["all", s["entries"], s["definitions"], "100.0%"]])
    print(f"examples {s['examples']}; variant {s['variant']}; seed {s['seed']}; case fold {'on' if s['case_fold'] else 'off'}")
    print(f"dataset {name}: {status} in {seconds:.1f}s; artifact {key}")
    print(f"  {path}")
