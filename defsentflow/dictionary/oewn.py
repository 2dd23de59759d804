"""Reader for the Open English WordNet YAML directory (``entries-*.yaml`` + synset files).

An entry is a lemma of ``entries-*.yaml``; its definitions are the glosses of the synsets of
its senses, looked up in the ``{noun,verb,adj,adv}.*.yaml`` files, with the synset's part of
speech, id and usage examples. Records name the entries file and the lemma's line.

The files are parsed by :mod:`defsentflow.dictionary.oewn_yaml` (about ten times faster than
PyYAML's C loader) in a small process pool; entries files are turned into records one at a
time, in file order, while the pool parses the next ones.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from defsentflow.dictionary.oewn_yaml import load_yaml
from defsentflow.dictionary.records import DefinitionRecord, Record, RejectedRecord
from defsentflow.workers import process_pool

__all__ = ["read_oewn", "oewn_files", "SYNSET_KEEP", "ENTRY_KEEP"]

# What the reader needs from each file kind (see oewn_yaml.prune for the depth convention).
SYNSET_KEEP = {1: frozenset({"definition", "example", "partOfSpeech"})}
ENTRY_KEEP = {2: frozenset({"sense"}), 3: frozenset({"id", "synset"})}

# Below this many bytes of YAML, parsing in this process beats starting worker processes.
POOL_MIN_BYTES = 4_000_000

_SYNSET_FILE = re.compile(r"^(noun|verb|adj|adv)\..+\.yaml$")
_ENTRIES_FILE = re.compile(r"^entries-.+\.yaml$")


def oewn_files(path: str | os.PathLike) -> tuple[list[Path], list[Path]]:
    """``(entries files, synset files)`` of an OEWN YAML directory, sorted by name.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        NotADirectoryError: ``path`` is a file.
        ValueError: the directory has no entries or no synset files.
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"OEWN source not found: {root}")
    if not root.is_dir():
        raise NotADirectoryError(f"OEWN source must be the YAML directory (entries-*.yaml, noun.*.yaml, ...): {root}")
    names = sorted(p.name for p in root.iterdir() if p.is_file())
    entries = [root / n for n in names if _ENTRIES_FILE.match(n)]
    synsets = [root / n for n in names if _SYNSET_FILE.match(n)]
    if not entries or not synsets:
        raise ValueError(f"{root}: not an OEWN YAML directory (found {len(entries)} entries-*.yaml and "
                         f"{len(synsets)} {{noun,verb,adj,adv}}.*.yaml files)")
    return entries, synsets


# A synset as the reader needs it: (definitions, examples, part of speech), or a problem text.
Synset = tuple[tuple[str, ...], tuple[str, ...], str | None] | str
# A sense as the reader needs it: (lemma, line, part-of-speech key, synset id or None, problem or None).
Sense = tuple[str, int, str, str | None, str | None]


def _load(job: tuple[str, bool]) -> dict[str, Synset] | list[Sense]:
    """Parse one file and digest it (in a worker process: only small tuples travel back)."""
    path, is_entries = job
    data, lines = load_yaml(path, ENTRY_KEEP if is_entries else SYNSET_KEEP)
    if is_entries:
        return list(_senses(data, lines))
    return {sid: _synset(body, path, lines.get(sid, 0)) for sid, body in data.items()}


def _parsed(jobs: list[tuple[str, bool]], workers: int) -> Iterator[Any]:
    """Parse files in order, ``workers`` processes at a time (in this process for 1, or when the
    files are too small to pay for starting processes)."""
    if workers <= 1 or len(jobs) < 2 or sum(os.path.getsize(p) for p, _ in jobs) < POOL_MIN_BYTES:
        yield from map(_load, jobs)
        return
    # spawn, not fork: the caller may hold threads (Prefect, DuckDB) that a fork would copy mid-lock.
    with process_pool(workers, "spawn") as pool:  # workers die with this process, even on kill -9
        yield from pool.map(_load, jobs)


def read_oewn(path: str | os.PathLike, source: str = "oewn", *, workers: int = 2,
              on_file: Callable[[Path], None] | None = None) -> Iterator[Record]:
    """Stream (lemma, gloss) records of an OEWN YAML directory.

    Args:
        path: the ``yaml/`` directory of an english-wordnet checkout.
        source: the source name records carry.
        workers: parsing processes (1 parses in this process).
        on_file: called after each file is parsed (progress).

    Example:
        >>> recs = [r for r in read_oewn("../shared/data/oewn/yaml") if r.entry == "dog"]
    """
    entries, synset_files = oewn_files(path)
    jobs = [(str(f), False) for f in synset_files] + [(str(f), True) for f in entries]
    parsed = _parsed(jobs, workers)
    synsets: dict[str, Any] = {}
    for f, digest in zip(synset_files, parsed):
        synsets.update(digest)
        if on_file:
            on_file(f)
    for f, senses in zip(entries, parsed):
        file = str(f)
        for lemma, line, pos_key, sid, problem in senses:
            syn = synsets.get(sid) if problem is None else problem
            if syn is None:
                yield RejectedRecord(source, file, line, "dangling_reference", f"{lemma}\t{sid}",
                                     f"synset {sid} of {lemma!r} is defined in no synset file")
            elif isinstance(syn, str):
                yield RejectedRecord(source, file, line, "malformed", f"{lemma}\t{pos_key}\t{sid or ''}", syn)
            else:
                defs, examples, pos = syn
                for d in defs:
                    yield DefinitionRecord(lemma, d, source, file, line, pos=pos, synset=sid, examples=examples)
        if on_file:
            on_file(f)


def _synset(body: Any, file: str, line: int) -> Synset:
    """``(definitions, examples, pos)``, or a problem description naming file and line."""
    where = f"synset at {file}:{line}"
    if not isinstance(body, dict):
        return f"{where} is not a mapping"
    defs = body.get("definition")
    if not isinstance(defs, list) or not all(isinstance(d, str) for d in defs):
        return f"{where} has no list of definition strings"
    examples = []
    for ex in body.get("example") or ():
        text = ex.get("text") if isinstance(ex, dict) else ex
        if not isinstance(text, str):
            return f"{where} has an example that is neither text nor a mapping with 'text'"
        examples.append(text)
    pos = body.get("partOfSpeech")
    return tuple(defs), tuple(examples), pos if isinstance(pos, str) else None


def _senses(data: dict[str, Any], lines: dict[str, int]) -> Iterator[Sense]:
    for lemma, by_pos in data.items():
        line = lines.get(lemma, 0)
        if not isinstance(by_pos, dict):
            yield lemma, line, "", None, f"lemma {lemma!r} is not a mapping of parts of speech"
            continue
        for pos_key, body in by_pos.items():
            senses = body.get("sense") if isinstance(body, dict) else None
            if not isinstance(senses, list):
                yield lemma, line, pos_key, None, f"lemma {lemma!r} ({pos_key}) has no sense list"
                continue
            for sense in senses:
                sid = sense.get("synset") if isinstance(sense, dict) else None
                if isinstance(sid, str):
                    yield lemma, line, pos_key, sid, None
                else:
                    yield lemma, line, pos_key, None, f"a sense of {lemma!r} ({pos_key}) has no synset id"
