"""``defsentflow export dictionary|pairs``: a Hugging Face ``DatasetDict`` with real splits and a card.

The folder holds what ``DatasetDict.save_to_disk`` writes (``datasets.load_from_disk(DIR)``), one
Parquet file per split as ``data/<split>-00000-of-00001.parquet`` (the name ``datasets`` looks for
first, so ``load_dataset("parquet", data_dir=DIR)`` reads these and never ``save_to_disk``'s Arrow
files; ``load_dataset(DIR)`` goes through the card's ``configs`` header) and ``README.md``. Dictionary
splits are the dataset's own (``dev`` is named ``validation``); a harvest's pairs have none, so
they are split 8:1:1 by a hash of the first sentence (:func:`~defsentflow.dictionary.split.assign_split`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from defsentflow.dictionary.split import assign_split
from defsentflow.dictionary.store import load_dictionary
from defsentflow.encoders.card import card_header, markdown_table, source_licences
from defsentflow.progress import live, quiet
from defsentflow.storage import Catalog
from defsentflow.storage.outputs import output_dir

__all__ = ["HF_SPLITS", "dataset_card", "export_dictionary", "export_pairs", "licence_id", "parquet_name",
           "write_dataset_dict"]

# Licence names as source_licences writes them -> the Hugging Face card's `license:` identifiers.
_LICENCE_IDS = {"CC BY 4.0": "cc-by-4.0", "CC BY-SA 4.0": "cc-by-sa-4.0", "CC BY-NC-SA 3.0": "cc-by-nc-sa-3.0",
                "CC0": "cc0-1.0"}

# Our split names -> the Hugging Face ones.
HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


def write_dataset_dict(tables: dict[str, pa.Table], out: Path) -> dict[str, int]:
    """``DatasetDict.save_to_disk(out)`` plus ``out/data/<split>.parquet`` (non-empty splits); the rows per split."""
    from datasets import Dataset, DatasetDict  # lazy: datasets loads only where it is used

    tables = {s: _one_chunk(t.replace_schema_metadata(None)) for s, t in tables.items()}
    dd = DatasetDict({split: Dataset(table) for split, table in tables.items()})
    with _library_bars():
        dd.save_to_disk(str(out), num_shards={s: 1 for s in dd})  # one shard even when a split is empty
    (out / "data").mkdir()
    for split, table in tables.items():
        if table.num_rows:  # datasets' Parquet reader fails on an empty file; the card lists only these
            pq.write_table(table, out / "data" / parquet_name(split))
    return {split: table.num_rows for split, table in tables.items()}


@contextlib.contextmanager
def _library_bars() -> Iterator[None]:
    """``datasets``' own progress bars (one per split) only where ours redraw in place: in a log they
    were three lines per split for a save of a second (:mod:`defsentflow.progress`)."""
    from datasets.utils.logging import (  # lazy: datasets loads only where it is used
        disable_progress_bar,
        enable_progress_bar,
        is_progress_bar_enabled,
    )

    was = is_progress_bar_enabled()
    if live() and not quiet():
        yield
        return
    disable_progress_bar()
    try:
        yield
    finally:
        if was:
            enable_progress_bar()


def parquet_name(split: str) -> str:
    """``train-00000-of-00001.parquet``: the sharded name ``load_dataset("parquet", data_dir=DIR)``
    tries before any other, so the Arrow files of ``save_to_disk`` beside it are never read as Parquet."""
    return f"{split}-00000-of-00001.parquet"


def _one_chunk(table: pa.Table) -> pa.Table:
    """``table`` in one chunk; an empty split too (``datasets`` cannot build a column of no chunks)."""
    return table.combine_chunks() if table.num_rows else pa.Table.from_pylist([], schema=table.schema)


def export_dictionary(name: str, dest: str | os.PathLike, *, root: str | os.PathLike | None = None) -> dict[str, int]:
    """Write dictionary dataset ``name`` to ``dest``; returns the rows per split.

    Raises:
        KeyError: no such dataset (one line, from the dictionary store).
        OutputRefusedError: ``dest`` is not a new folder or an earlier export of this command.
    """
    table = load_dictionary(name, root=root)
    rows = Catalog(root).query("SELECT variant, sources FROM dictionaries WHERE name = ?", [name])
    info = rows[0] if rows else {}
    sources = info.get("sources") or []
    sources = json.loads(sources) if isinstance(sources, str) else sources
    keep = [c for c in table.column_names if c != "split"]
    tables = {hf: table.filter(pc.equal(table.column("split"), ours)).select(keep) for ours, hf in HF_SPLITS.items()}
    with output_dir(dest, command="export dictionary", root=root) as tmp:
        sizes = write_dataset_dict(tables, tmp)
        (tmp / "README.md").write_text(dataset_card(
            name=name, kind="dictionary", splits=sizes, columns=keep,
            description=f"The definitions of the defsentflow dictionary dataset `{name}` "
                        f"(variant {info.get('variant', '?')}): one row per (entry, definition).",
            licences=source_licences(sources),
            source_splits="Splits come from a hash of (seed, entry): every definition of an entry is in one split, "
                          "and adding entries never moves old ones. `validation` is defsentflow's `dev` split."))
    return sizes


def licence_id(licences: list[str]) -> str:
    """The card's ``license:``: the one licence every source has (``cc-by-4.0`` for WordNet), else
    ``other`` (the card's Licences section says which)."""
    found = {next((i for n, i in _LICENCE_IDS.items() if n in line), "other") for line in licences}
    return found.pop() if len(found) == 1 else "other"


def dataset_card(*, name: str, kind: str, splits: dict[str, int], columns: list[str], description: str,
                 licences: list[str], source_splits: str) -> str:
    """The ``README.md`` of an exported dataset: header with the split layout, sizes, how to load."""
    files = [s for s, n in splits.items() if n]  # an empty split has no Parquet file
    configs = [{"config_name": "default", "data_files": [{"split": s, "path": f"data/{parquet_name(s)}"} for s in files]}]
    licence = licence_id(licences)
    header = card_header({"pretty_name": f"defsentflow {kind} {name}", "language": ["en"], "license": licence,
                          **({"license_name": "see-the-licences-section"} if licence == "other" else {}),
                          "tags": ["defsentflow", kind], "configs": configs})
    lines = [header, f"# {name} ({kind})", "", description, "", "## Splits", ""]
    lines += markdown_table(["split", "rows"], [(s, n) for s, n in splits.items()]) + [""]
    lines += [source_splits, "", "## Columns", "", ", ".join(f"`{c}`" for c in columns), "", "## Loading", "",
              "```python", "from datasets import load_from_disk, load_dataset", "",
              'ds = load_from_disk("DIR")                  # a DatasetDict: train / validation / test',
              'ds = load_dataset("parquet", data_dir="DIR")  # the same splits, from the Parquet files',
              "```", "",
              "The Parquet files are `data/<split>-00000-of-00001.parquet`, one per non-empty split.", "",
              "## Licences", ""]
    lines += [f"- {x}" for x in licences] + [""]
    return "\n".join(lines)


def _pairs_artifact(name: str, root: str | os.PathLike | None) -> dict:
    rows = Catalog(root).query(
        "SELECT artifact_key, name, path FROM artifacts WHERE kind = 'pairs' AND (name = ? OR artifact_key = ? "
        "OR artifact_key LIKE ? || '%') ORDER BY created_at DESC LIMIT 1", [name, name, name])
    if not rows or not Path(rows[0]["path"]).is_file():
        raise KeyError(f"no harvested pairs named {name!r} in the catalog (names: <corpus>-pairs; see harvest_stats)")
    return rows[0]


def export_pairs(name: str, dest: str | os.PathLike, *, root: str | os.PathLike | None = None) -> dict[str, int]:
    """Write the harvested pairs ``name`` (artifact name or key) to ``dest``; returns the rows per split."""
    art = _pairs_artifact(name, root)
    table = pq.read_table(art["path"])
    keep = [c for c in ("s1", "s2", "score", "kind", "s1_id", "s2_id") if c in table.column_names]
    table = table.select(keep)
    split = pa.array([assign_split(s) for s in table.column("s1").to_pylist()])
    tables = {hf: table.filter(pc.equal(split, ours)) for ours, hf in HF_SPLITS.items()}
    with output_dir(dest, command="export pairs", root=root) as tmp:
        sizes = write_dataset_dict(tables, tmp)
        (tmp / "README.md").write_text(dataset_card(
            name=str(art["name"] or name), kind="pairs", splits=sizes, columns=keep,
            description="Sentence pairs harvested by defsentflow with their contextual similarity label (`score`): "
                        "the surrogate's training data.",
            licences=["the licence of the corpus the sentences were harvested from"],
            source_splits="The harvest has no splits; pairs are split 8:1:1 by a hash of the first sentence "
                          "(`s1`), so all pairs sharing a first sentence are in one split."))
    return sizes
