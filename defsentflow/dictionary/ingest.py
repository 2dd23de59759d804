"""Ingest dictionary sources into a named, content-addressed dataset.

Three steps, callable one by one (the Prefect tasks do) or through :func:`ingest_dictionary`:

1. :func:`plan_dictionary` checks every source is there and readable and hashes it; the artifact
   key is a hash of those content hashes, the reader config, variant, tokenizer, seed and the
   code version. A missing or unreadable source fails here, before anything is written.
2. :func:`build_dictionary` reads and merges the sources and writes the Parquet artifact
   atomically, unless an artifact with that key is already complete.
3. :func:`register_dictionary` loads it into the catalog in one transaction.

A dataset already registered with the planned key is left alone: the same command on unchanged
sources hashes the inputs, finds the key and writes nothing.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from defsentflow.dictionary.config import DictionaryConfig
from defsentflow.dictionary.jsonl import read_jsonl
from defsentflow.dictionary.merge import SourceCounts
from defsentflow.dictionary.oewn import oewn_files, read_oewn
from defsentflow.dictionary.oxford import read_oxford
from defsentflow.dictionary.records import Record, SourceKind
from defsentflow.dictionary.store import (
    dictionary_dir,
    files_match_summary,
    read_summary,
    register_artifact,
    registered_key,
    seal_artifact,
)
from defsentflow.dictionary.stream_merge import MergeOutcome, merge_to_directory
from defsentflow.dictionary.tsv import read_tsv
from defsentflow.dictionary.variants import tokenizer_id, whole_token_filter
from defsentflow.dictionary.wiktextract import read_wiktextract
from defsentflow.progress import progress
from defsentflow.storage import (
    Catalog,
    atomic_dir,
    clean_stale_temporaries,
    code_version,
    combine_hashes,
    hash_config,
    hash_path,
)
from defsentflow.storage.locks import artifact_lock

__all__ = [
    "READERS",
    "DictionaryPlan",
    "DictionaryArtifact",
    "IngestResult",
    "plan_dictionary",
    "build_dictionary",
    "register_dictionary",
    "DictionarySteps",
    "ingest_dictionary",
]

log = logging.getLogger(__name__)

# kind -> reader(path, source name); each yields DefinitionRecord or RejectedRecord.
READERS: dict[str, Callable[..., Iterator[Record]]] = {
    "oewn": read_oewn,
    "oxford": read_oxford,
    "tsv": read_tsv,
    "jsonl": read_jsonl,
    "wiktextract": read_wiktextract,
}


@dataclass(frozen=True)
class DictionaryPlan:
    """The artifact key of a config and the content hashes it was computed from."""

    key: str
    input_hashes: dict[str, str]
    key_config: dict[str, Any]


@dataclass(frozen=True)
class DictionaryArtifact:
    """A complete artifact directory and its summary; ``built`` is False if it was found."""

    key: str
    path: Path
    summary: dict[str, Any]
    built: bool


@dataclass(frozen=True)
class IngestResult:
    """What an ingest did: ``status`` is ``built``, ``registered`` (artifact found, catalog rows
    reloaded) or ``unchanged`` (already registered; nothing written)."""

    name: str
    key: str
    path: Path
    status: str
    summary: dict[str, Any]
    seconds: float = field(default=0.0)


def _check_readable(kind: SourceKind, path: Path) -> None:
    if not path.exists():
        raise FileNotFoundError(f"{kind} source not found: {path}")
    if kind == "oewn":
        oewn_files(path)
    elif not path.is_file():
        raise IsADirectoryError(f"{kind} source must be a file: {path}")
    targets = [p for p in path.iterdir() if p.is_file()] if path.is_dir() else [path]
    for p in [path, *targets]:
        if not os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0)):
            raise PermissionError(f"{kind} source not readable: {p}")


def plan_dictionary(config: DictionaryConfig) -> DictionaryPlan:
    """Check the sources and compute the artifact key.

    Raises:
        FileNotFoundError, PermissionError, IsADirectoryError, ValueError: a source is missing,
            unreadable or of the wrong shape (the message names it).
    """
    input_hashes: dict[str, str] = {}
    parts: list[str] = []
    for spec, name in zip(config.sources, config.source_names()):
        for p in spec.paths:
            path = Path(p)
            _check_readable(spec.kind, path)
            digest = hash_path(path)
            input_hashes[f"{name}:{path.resolve()}"] = digest
            parts.append(f"{name}={digest}")
    key_config = {**config.key_fields(), "tokenizer": tokenizer_id(config.tokenizer)}
    key = combine_hashes(["dictionary", *parts, hash_config(key_config), code_version()])
    return DictionaryPlan(key, input_hashes, key_config)


def _read_source(kind: SourceKind, path: str | os.PathLike, name: str, *, workers: int = 2,
                **options: Any) -> Iterator[Record]:
    """The records of one source path, with a progress bar over records (files for OEWN);
    ``options`` go to the reader (``lang_code`` for wiktextract)."""
    if kind == "oewn":
        entries, synsets = oewn_files(path)
        bar = progress(total=len(entries) + len(synsets), desc=f"{name}: parsing", unit="file")
        try:
            yield from read_oewn(path, name, workers=workers, on_file=lambda _f: bar.update())
        finally:
            bar.close()
        return
    with progress(desc=f"{name}: {Path(path).name}", unit="rec") as bar:
        n = 0
        for n, rec in enumerate(READERS[kind](path, name, **options), 1):
            if not n & 1023:  # the bar's own bookkeeping costs as much as a record: every 1,024
                bar.update(1024)
            yield rec
        bar.update(n & 1023)


def _streams(config: DictionaryConfig) -> Iterator[tuple[str, Iterator[Record]]]:
    for spec, name in zip(config.sources, config.source_names()):
        for p in spec.paths:
            yield name, _read_source(spec.kind, p, name, workers=config.workers, **spec.reader_options())


def _merge_options(config: DictionaryConfig) -> dict[str, Any]:
    entry_filter = whole_token_filter(config.tokenizer) if config.variant == "c" and config.tokenizer else None
    return dict(case_fold=config.case_fold, max_chars=config.max_chars, seed=config.seed, ratios=config.ratios,
                split_by=config.split_by, entry_filter=entry_filter)


def _summary(config: DictionaryConfig, plan: DictionaryPlan, merged: MergeOutcome, seconds: float) -> dict[str, Any]:
    total = merged.total()
    sources = [{"name": n, "kind": s.kind, "paths": [str(Path(p).resolve()) for p in s.paths],
                **asdict(merged.counts.get(n, SourceCounts()))} for s, n in zip(config.sources, config.source_names())]
    return {
        "name": config.name, "key": plan.key, "variant": config.variant, "tokenizer": config.tokenizer,
        "seed": config.seed, "split_by": config.split_by, "case_fold": config.case_fold, "sources": sources,
        "read": total.read, "accepted": total.accepted, "duplicates": total.duplicates, "excluded": total.excluded,
        "quarantined": total.quarantined, "examples_quarantined": merged.examples_quarantined, "reasons": merged.reasons,
        "entries": merged.entries, "definitions": merged.definitions, "examples": merged.examples,
        "splits": merged.splits, "seconds": round(seconds, 3), "code_version": code_version(),
    }


def _existing(plan: DictionaryPlan, config: DictionaryConfig, root: str | os.PathLike | None) -> DictionaryArtifact | None:
    cat = Catalog(root)
    if cat.path.exists():
        art = cat.artifact(plan.key)  # checked against its manifest
        if art is not None:
            summary = read_summary(art["path"])
            return DictionaryArtifact(plan.key, Path(art["path"]), summary, built=False) if summary else None
        if cat.query("SELECT 1 FROM artifacts WHERE artifact_key = ?", [plan.key]):
            return None  # registered, but missing or changed since: rebuild
    # Written but never registered (a kill between the two): reuse it if its files hash right.
    path = dictionary_dir(config.name, plan.key, root)
    summary = read_summary(path)
    if summary is not None and files_match_summary(path, summary):
        return DictionaryArtifact(plan.key, path, summary, built=False)
    return None


def build_dictionary(config: DictionaryConfig, plan: DictionaryPlan | None = None, *,
                     root: str | os.PathLike | None = None) -> DictionaryArtifact:
    """Read, merge and write the artifact of ``config`` (or find it complete already).

    Raises:
        ValueError: no definition was accepted (nothing is written).
    """
    plan = plan or plan_dictionary(config)
    with artifact_lock(plan.key, root):
        found = _existing(plan, config, root)
        if found is not None:
            return found
        t0 = time.perf_counter()
        final = dictionary_dir(config.name, plan.key, root)
        clean_stale_temporaries(final.parent)
        with atomic_dir(final) as tmp:  # streamed: the tables are written batch by batch, never held whole
            merged = merge_to_directory(_streams(config), tmp, **_merge_options(config))
            total = merged.total()
            assert total.balanced(), vars(total)
            if merged.definitions == 0:
                raise ValueError(f"dictionary {config.name!r}: no definition accepted ({total.read} records read, "
                                 f"{total.quarantined} quarantined, {total.excluded} excluded by variant {config.variant}); "
                                 "nothing written")
            summary = seal_artifact(tmp, _summary(config, plan, merged, time.perf_counter() - t0))
        log.debug("dictionary %s: %d entries, %d definitions -> %s", config.name, summary["entries"], summary["definitions"], final)
        return DictionaryArtifact(plan.key, final, summary, built=True)


def register_dictionary(config: DictionaryConfig, artifact: DictionaryArtifact, plan: DictionaryPlan, *,
                        root: str | os.PathLike | None = None) -> bool:
    """Load the artifact into the catalog as dataset ``config.name``; False if it already was."""
    if not artifact.built and registered_key(config.name, root) == artifact.key:
        return False
    register_artifact(config.name, artifact.path, artifact.summary, input_hashes=plan.input_hashes,
                      config={**plan.key_config, "tokenizer_name": config.tokenizer}, root=root,
                      status="built" if artifact.built else "registered")
    return True


@dataclass(frozen=True)
class DictionarySteps:
    """The ingest's pieces: the library's own functions here, Prefect tasks in the
    ``ingest-dictionary`` flow (``tasks/dictionary.py``). :func:`ingest_dictionary` calls them in
    its one order. Signatures as :func:`build_dictionary` and :func:`register_dictionary`."""

    build: Callable[..., DictionaryArtifact] = build_dictionary
    register: Callable[..., bool] = register_dictionary


LOCAL = DictionarySteps()


def ingest_dictionary(config: DictionaryConfig, *, root: str | os.PathLike | None = None, run_id: str | None = None,
                      steps: DictionarySteps = LOCAL) -> IngestResult:
    """The ingest's one sequencer: plan, build and register ``config``'s dataset; a no-op if it is
    registered with the same key. ``run_id``: open and close a ``runs`` row (flow
    ``ingest-dictionary``) under this id; ``steps``: the executor of the pieces.

    Example:
        >>> cfg = DictionaryConfig(name="oewn", sources=[{"kind": "oewn", "paths": ["../shared/data/oewn/yaml"]}])
        >>> ingest_dictionary(cfg).summary["entries"]
    """
    with Catalog(root).recorded_run("ingest-dictionary", run_id, config=config.model_dump(mode="json")) as run:
        result = _sequence(config, root, steps)
        run.note = f"{result.status} {result.name} {result.key}"
    return result


def _sequence(config: DictionaryConfig, root: str | os.PathLike | None, steps: DictionarySteps) -> IngestResult:
    t0 = time.perf_counter()
    plan = plan_dictionary(config)
    if registered_key(config.name, root) == plan.key:
        art = _existing(plan, config, root)
        if art is not None:
            return IngestResult(config.name, plan.key, art.path, "unchanged", art.summary, time.perf_counter() - t0)
    art = steps.build(config, plan, root=root)
    steps.register(config, art, plan, root=root)
    status = "built" if art.built else "registered"
    return IngestResult(config.name, plan.key, art.path, status, art.summary, time.perf_counter() - t0)
