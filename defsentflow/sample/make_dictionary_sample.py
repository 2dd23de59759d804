"""Regenerate ``dictionary/oewn-sample.jsonl``: a small, deterministic cut of Open English WordNet.

The sample holds every definition of about 4,000 lower-cased WordNet entries: those whose hash
is 0 modulo ``--modulus``, plus a fixed list of common words (the vocabulary of the tests' tiny
tokenizer and other frequent English words, many with several senses). One JSON object per
(entry, definition), in the generic JSONL dictionary format, with part of speech, synset id and
usage examples::

    python -m defsentflow.sample.make_dictionary_sample --oewn ../shared/data/oewn/yaml
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from defsentflow.dictionary.oewn import read_oewn
from defsentflow.dictionary.records import DefinitionRecord
from defsentflow.dictionary.validate import check_record, normalize_entry, normalize_text
from defsentflow.storage import repo_root

__all__ = ["COMMON_WORDS", "select_entry", "build_sample", "main"]

OUT = Path(__file__).resolve().parent / "dictionary" / "oewn-sample.jsonl"

COMMON_WORDS = frozenset((
    # tests/conftest.py WORDS: the tiny tokenizer's vocabulary, so variant c has hits on the sample
    "the a an of to is in and or for with on at by from that which who what as be are was "
    "cat dog animal small large big house home place where people live lives person water "
    "drink liquid clear river sea fish bird fly wing tree plant green leaf sun light day night "
    "dark car road drive vehicle wheel book read page word words meaning sentence text "
    "run walk move fast slow quickly food eat meal bread fruit apple red sweet round "
    "happy sad feeling good bad music sound song play game ball child children young old "
    "man woman king queen ruler country city town building room door window open close "
    # more frequent words with several senses
    "time year way thing world life hand part eye place case week point government company "
    "number group problem fact head face name mother father friend school money story horse "
    "stone table chair bank bed glass paper letter line love power war peace art law").split())


def select_entry(entry: str, modulus: int) -> bool:
    """The deterministic part of the selection: a content hash of the entry."""
    digest = hashlib.blake2b(entry.encode("utf-8"), digest_size=8).digest()
    return entry in COMMON_WORDS or int.from_bytes(digest, "big") % modulus == 0


def build_sample(oewn_dir: str | Path, modulus: int = 34) -> list[dict]:
    """The sample's rows, sorted by entry, each definition once (as the dataset would keep it)."""
    rows: dict[tuple[str, str], dict] = {}
    for rec in read_oewn(oewn_dir, workers=2):
        if not isinstance(rec, DefinitionRecord) or check_record(rec) is not None:
            continue
        entry = normalize_entry(rec.entry)
        if not select_entry(entry, modulus):
            continue
        key = (entry, normalize_text(rec.definition))
        row = rows.setdefault(key, {"entry": entry, "definition": key[1], "pos": rec.pos, "synset": rec.synset,
                                    "examples": []})
        for ex in rec.examples:
            if ex not in row["examples"]:
                row["examples"].append(ex)
    out = []
    for key in sorted(rows, key=lambda k: k[0]):  # stable: reader order within an entry
        row = rows[key]
        if not row["examples"]:
            del row["examples"]
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oewn", default=str(repo_root().parent / "shared" / "data" / "oewn" / "yaml"),
                        help="the OEWN yaml/ directory (default ../shared/data/oewn/yaml)")
    parser.add_argument("--out", default=str(OUT), help=f"output JSONL (default {OUT})")
    parser.add_argument("--modulus", type=int, default=34, help="keep entries whose hash %% MODULUS == 0 (default 34)")
    args = parser.parse_args(argv)
    rows = build_sample(args.oewn, args.modulus)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    entries = len({r["entry"] for r in rows})
    print(f"{out}: {entries} entries, {len(rows)} definitions, {out.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
