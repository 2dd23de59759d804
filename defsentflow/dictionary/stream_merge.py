"""The merge of :mod:`defsentflow.dictionary.merge`, streamed and out of core through DuckDB.

Records are validated and normalised one by one as the readers yield them and staged in batches
into an in-memory DuckDB database that spills to disk past its memory limit; de-duplication,
per-source accounting and the order of the output are SQL; the split is computed and the Parquet
files written batch by batch. Python holds one batch at a time, so memory stays flat however many
records there are. The rules are those of :func:`~defsentflow.dictionary.merge.merge_records`
(which calls this): the first record of a definition (in source, file and line order) gives its
metadata; ``pos`` and ``synset`` are the first non-empty value; identical examples of a
definition are stored once, in order of first appearance; an invalid example is quarantined once
per (source, text) unless the same text was already accepted for its definition.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from defsentflow.dictionary.records import SPLITS, Record, RejectedRecord
from defsentflow.dictionary.schemas import DEFINITIONS_SCHEMA, EXAMPLES_SCHEMA, QUARANTINE_SCHEMA
from defsentflow.dictionary.split import DEFAULT_RATIOS, SplitBy, split_rows
from defsentflow.dictionary.validate import (
    MAX_CHARS,
    check_record,
    check_text,
    lone_surrogate,
    normalize_entry,
    normalize_text,
    printable,
    raw_text,
    undecodable,
)
from defsentflow.limits import LIMITS

__all__ = ["SourceCounts", "RAW_LIMIT", "MergeOutcome", "merge_to_directory", "BATCH_ROWS", "MEMORY_LIMIT", "FILES"]

FILES = ("definitions.parquet", "examples.parquet", "quarantine.parquet")
BATCH_ROWS = 50_000
MEMORY_LIMIT = "384MB"  # DuckDB's share; past it the staging tables spill to a temporary directory
_EX_STRIDE = 1 << 20  # order key of an example: record sequence * stride + its index in the record


# Quarantined raw text is cut here: an over-long record is kept as evidence, not as a copy.
RAW_LIMIT = 10_000


@dataclass
class SourceCounts:
    """How one source's records were accounted for."""

    read: int = 0
    accepted: int = 0
    duplicates: int = 0
    excluded: int = 0
    quarantined: int = 0

    def balanced(self) -> bool:
        return self.read == self.accepted + self.duplicates + self.excluded + self.quarantined


@dataclass
class MergeOutcome:
    """What a streamed merge wrote: accounting per source (``SourceCounts``) and the sizes."""

    counts: dict
    examples_quarantined: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    entries: int = 0
    definitions: int = 0
    examples: int = 0
    splits: dict[str, dict[str, int]] = field(default_factory=dict)

    def total(self) -> SourceCounts:
        t = SourceCounts()
        for c in self.counts.values():
            for k in ("read", "accepted", "duplicates", "excluded", "quarantined"):
                setattr(t, k, getattr(t, k) + getattr(c, k))
        return t


class _Stage:
    """Rows buffered in Python and inserted into a DuckDB table ``BATCH_ROWS`` at a time."""

    def __init__(self, con: duckdb.DuckDBPyConnection, table: str, schema: pa.Schema):
        self.con, self.table, self.schema = con, table, schema
        cols = ", ".join(f"{f.name} {_SQL_TYPES[str(f.type)]}" for f in schema)
        con.execute(f"CREATE TABLE {table} ({cols})")
        self.rows: list[tuple] = []

    def add(self, *values) -> None:
        self.add_row(values)

    def add_row(self, row: tuple) -> None:
        self.rows.append(row)
        if len(self.rows) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        cols = [list(c) for c in zip(*self.rows)]
        batch = pa.table(cols, schema=self.schema)  # noqa: F841 (read by DuckDB below)
        self.con.execute(f"INSERT INTO {self.table} SELECT * FROM batch")
        self.rows = []


_SQL_TYPES = {"int64": "BIGINT", "int32": "INTEGER", "string": "VARCHAR"}
_RECS = pa.schema([("seq", pa.int64()), ("src", pa.int32()), ("entry", pa.string()), ("definition", pa.string()),
                   ("pos", pa.string()), ("synset", pa.string()), ("meta", pa.string())])
_EXS = pa.schema([("seq", pa.int64()), ("idx", pa.int32()), ("example", pa.string())])
_QUAR = pa.schema([*QUARANTINE_SCHEMA, pa.field("o", pa.int64())])
_IDS = pa.schema([("first", pa.int64()), ("def_id", pa.int64()), ("split", pa.string())])


def _quarantine_row(rej: RejectedRecord, order: int, prefix: str = "", kept: dict[str, int] | None = None) -> tuple:
    """The quarantine row of ``rej``: its raw text cut to :data:`RAW_LIMIT` characters, and left out once
    ``LIMITS["quarantine_chars"]`` of its file's raw text are kept (``kept`` counts them per file), so one
    long line rejected once per sense cannot multiply into gigabytes."""
    raw, detail = rej.raw, prefix + rej.detail
    if len(raw) > RAW_LIMIT:
        raw = raw[:RAW_LIMIT]
        detail += f" (raw text cut to {RAW_LIMIT} characters)"
    if kept is not None:
        used = kept.get(rej.file, 0)
        if used + len(raw) > LIMITS["quarantine_chars"]:
            raw, detail = "", detail + f" (raw text not kept: {LIMITS['quarantine_chars']} characters of this file are)"
        kept[rej.file] = used + len(raw)
    return rej.source, rej.file, rej.line, rej.reason, detail, raw, order


def merge_to_directory(
    sources: Iterable[tuple[str, Iterable[Record]]],
    out_dir: str | Path,
    *,
    case_fold: bool = True,
    max_chars: int = MAX_CHARS,
    seed: int = 0,
    ratios: tuple[float, float, float] = DEFAULT_RATIOS,
    split_by: SplitBy = "entry",
    entry_filter: Callable[[Sequence[str]], list[bool]] | None = None,
) -> MergeOutcome:
    """Merge ``(source name, records)`` pairs into ``definitions/examples/quarantine.parquet`` under ``out_dir``.

    Arguments as :func:`~defsentflow.dictionary.merge.merge_records`.
    """
    out = Path(out_dir)
    with tempfile.TemporaryDirectory(prefix="merge-", dir=out) as spill:
        con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": spill, "threads": 2,
                                     "preserve_insertion_order": False})
        try:
            return _merge(con, sources, out, case_fold=case_fold, max_chars=max_chars, seed=seed, ratios=ratios,
                          split_by=split_by, entry_filter=entry_filter)
        finally:
            con.close()


def _merge(con, sources, out: Path, *, case_fold, max_chars, seed, ratios, split_by, entry_filter) -> MergeOutcome:
    recs, exs, quar = _Stage(con, "recs", _RECS), _Stage(con, "exs", _EXS), _Stage(con, "quar", _QUAR)
    names: list[str] = []
    counts: dict[str, SourceCounts] = {}
    bad_examples: list[tuple] = []  # rare: kept in Python, resolved against the accepted examples below
    kept: dict[str, int] = {}  # raw characters quarantined per input file
    seq = 0
    add_rec = recs.add_row
    for name, records in sources:
        c = counts.setdefault(name, SourceCounts())
        if name not in names:
            names.append(name)
        src = names.index(name)
        first = seq
        for rec in records:
            seq += 1
            bad = rec if isinstance(rec, RejectedRecord) else check_record(rec, max_chars)
            meta = None
            if bad is None and rec.meta:
                meta = json.dumps(rec.meta, sort_keys=True, ensure_ascii=False, default=str)
                if lone_surrogate(meta):
                    bad = RejectedRecord(rec.source, rec.file, rec.line, "invalid_utf8", raw_text(rec),
                                         "metadata has a lone surrogate (an escape that is no character)")
            if bad is not None:
                quar.add(*_quarantine_row(bad, seq * _EX_STRIDE - 1, kept=kept))
                c.quarantined += 1
                continue
            entry = normalize_entry(rec.entry, case_fold)
            add_rec((seq, src, entry, normalize_text(rec.definition), rec.pos, rec.synset, meta))
            for j, ex in enumerate(rec.examples):
                problem = check_text(ex, "example", max_chars)
                if problem is None:
                    exs.add_row((seq, j, normalize_text(ex)))
                else:
                    bad_examples.append((seq, j, name, ex, normalize_text(ex), entry, rec.file, rec.line, problem))
        c.read += seq - first
    recs.flush()
    exs.flush()

    con.execute("""
        CREATE TABLE defs AS
        WITH g AS (
            SELECT entry, definition, min(seq) AS first,
                   coalesce(arg_min(pos, seq) FILTER (WHERE pos <> ''), arg_max_null(pos, seq)) AS pos,
                   coalesce(arg_min(synset, seq) FILTER (WHERE synset <> ''), arg_max_null(synset, seq)) AS synset,
                   arg_min_null(meta, seq) AS meta
            FROM recs GROUP BY entry, definition),
        s AS (
            SELECT entry, definition, list(src ORDER BY s) AS srcs, arg_min(src, s) AS origin
            FROM (SELECT entry, definition, src, min(seq) AS s FROM recs GROUP BY ALL) GROUP BY entry, definition)
        SELECT g.*, s.srcs, s.origin FROM g JOIN s USING (entry, definition)""")
    good = {r[0]: r[1] for r in con.execute("SELECT src, count(*) FROM recs GROUP BY src").fetchall()}
    for src, n in con.execute("SELECT origin, count(*) FROM defs GROUP BY origin").fetchall():
        counts[names[src]].accepted += n
    for src, name in enumerate(names):
        counts[name].duplicates = good.get(src, 0) - counts[name].accepted

    dropped = _Stage(con, "dropped", pa.schema([("entry", pa.string())]))
    if entry_filter is not None:
        _apply_entry_filter(con, dropped, entry_filter)
        for src, n in con.execute("SELECT origin, count(*) FROM defs SEMI JOIN dropped USING (entry) GROUP BY origin").fetchall():
            counts[names[src]].accepted -= n
            counts[names[src]].excluded += n

    outcome = MergeOutcome(counts=counts, splits={s: {"definitions": 0, "entries": 0} for s in SPLITS})
    _write_definitions(con, out / FILES[0], names, outcome, split_by=split_by, seed=seed, ratios=ratios)
    _quarantine_examples(con, quar, bad_examples, outcome, kept)
    quar.flush()
    outcome.examples = _copy_out(con, """
        SELECT m.def_id, r.entry, x.example, m.split FROM exs x JOIN recs r USING (seq)
        JOIN defs d USING (entry, definition) JOIN ids m ON m.first = d.first
        GROUP BY ALL ORDER BY m.def_id, min(x.seq * ? + x.idx)""", [_EX_STRIDE], out / FILES[1], EXAMPLES_SCHEMA)
    _copy_out(con, "SELECT source, file, line, reason, detail, raw FROM quar ORDER BY o", [], out / FILES[2], QUARANTINE_SCHEMA)
    reasons: dict[str, int] = {}
    for reason, n in con.execute("SELECT reason, count(*) FROM quar GROUP BY reason").fetchall():
        reasons[reason] = n
    outcome.reasons = dict(sorted(reasons.items()))
    return outcome


def _apply_entry_filter(con, dropped: _Stage, entry_filter: Callable[[Sequence[str]], list[bool]]) -> None:
    reader = con.cursor().sql("SELECT DISTINCT entry FROM defs ORDER BY entry").to_arrow_reader(4096)
    for batch in reader:
        unique = batch.column(0).to_pylist()
        for e, keep in zip(unique, entry_filter(unique)):
            if not keep:
                dropped.add(e)
    dropped.flush()


def _write_definitions(con, path: Path, names: list[str], outcome: MergeOutcome, *, split_by, seed, ratios) -> None:
    con.execute(f"CREATE TABLE ids ({', '.join(f'{f.name} {_SQL_TYPES[str(f.type)]}' for f in _IDS)})")
    reader = con.cursor().sql(
        "SELECT entry, definition, pos, synset, list_transform(srcs, lambda i: ($names::VARCHAR[])[i + 1]) AS sources, "
        "meta, first FROM defs ANTI JOIN dropped USING (entry) ORDER BY entry, first",
        params={"names": names}).to_arrow_reader(BATCH_ROWS)
    def_id, previous = 0, None
    with pq.ParquetWriter(path, DEFINITIONS_SCHEMA, compression="zstd") as writer:
        for batch in reader:
            entries = batch.column(0).to_pylist()
            splits = split_rows(entries, batch.column(1).to_pylist(), split_by, seed, ratios)
            n = len(entries)
            # an entry is counted in the split of its first row (every row of an entry shares its split by entry)
            starts = [s for s, e, p in zip(splits, entries, [previous, *entries[:-1]]) if e != p]
            for split, k in Counter(splits).items():
                outcome.splits[split]["definitions"] += k
            for split, k in Counter(starts).items():
                outcome.splits[split]["entries"] += k
            outcome.entries += len(starts)
            previous = entries[-1] if entries else previous
            def_ids, split_col = pa.array(range(def_id, def_id + n), pa.int64()), pa.array(splits, pa.string())
            id_rows = pa.table([batch.column(6), def_ids, split_col], schema=_IDS)  # noqa: F841 (read by DuckDB below)
            con.execute("INSERT INTO ids SELECT * FROM id_rows")
            writer.write_table(pa.table({
                "def_id": def_ids, "entry": batch.column(0), "definition": batch.column(1), "split": split_col,
                "pos": batch.column(2), "synset": batch.column(3), "sources": batch.column(4).cast(pa.list_(pa.string())),
                "meta": batch.column(5)}, schema=DEFINITIONS_SCHEMA))
            def_id += n
    outcome.definitions = def_id


def _quarantine_examples(con, quar: _Stage, bad_examples: list[tuple], outcome: MergeOutcome,
                         kept: dict[str, int] | None = None) -> None:
    """Quarantine each invalid example once per (source, text), unless its definition already had that text."""
    if not bad_examples:
        return
    cand = pa.table({"seq": [b[0] for b in bad_examples], "idx": [b[1] for b in bad_examples],  # noqa: F841
                     "example": [None if undecodable(b[4]) else b[4] for b in bad_examples]})
    shadowed = set(con.execute("""
        SELECT c.seq, c.idx FROM cand c JOIN recs r USING (seq)
        WHERE c.example IS NOT NULL AND EXISTS (
            SELECT 1 FROM exs x JOIN recs r2 USING (seq)
            WHERE r2.entry = r.entry AND r2.definition = r.definition AND x.example = c.example
              AND x.seq * ? + x.idx < c.seq * ? + c.idx)""", [_EX_STRIDE, _EX_STRIDE]).fetchall())
    seen: set[tuple[str, str]] = set()
    for seq, j, name, ex, _text, entry, file, line, (reason, detail) in bad_examples:
        if (seq, j) in shadowed or (name, ex) in seen:
            continue
        seen.add((name, ex))
        outcome.examples_quarantined += 1
        rej = RejectedRecord(name, file, line, reason, printable(ex), detail)
        quar.add(*_quarantine_row(rej, seq * _EX_STRIDE + j, prefix=f"example of {entry!r}: ", kept=kept))


def _copy_out(con, sql: str, params: list, path: Path, schema: pa.Schema) -> int:
    rows = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for batch in con.sql(sql, params=params or None).to_arrow_reader(BATCH_ROWS):
            writer.write_table(pa.Table.from_batches([batch]).rename_columns(schema.names).cast(schema))
            rows += batch.num_rows
    return rows
