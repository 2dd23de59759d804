"""Dictionaries: readers (OEWN, Oxford, TSV, JSONL), merging, splits, quarantine and storage.

Example:
    >>> from defsentflow.dictionary import DictionaryConfig, ingest_dictionary, load_dictionary
    >>> ingest_dictionary(DictionaryConfig(name="oewn", sources=[{"kind": "oewn", "paths": ["../shared/data/oewn/yaml"]}]))
    >>> load_dictionary("oewn", split="train").num_rows
"""

from __future__ import annotations

from defsentflow.dictionary.config import DictionaryConfig, SourceSpec
from defsentflow.dictionary.ingest import (
    READERS,
    DictionaryArtifact,
    DictionaryPlan,
    IngestResult,
    build_dictionary,
    ingest_dictionary,
    plan_dictionary,
    register_dictionary,
)
from defsentflow.dictionary.jsonl import read_jsonl
from defsentflow.dictionary.merge import MergedDictionary, SourceCounts, merge_records
from defsentflow.dictionary.oewn import oewn_files, read_oewn
from defsentflow.dictionary.oxford import read_oxford
from defsentflow.dictionary.records import (
    SOURCE_KINDS,
    SPLITS,
    VARIANTS,
    DefinitionRecord,
    QuarantineReason,
    Record,
    RejectedRecord,
    SourceKind,
    Split,
    Variant,
)
from defsentflow.dictionary.schemas import DEFINITIONS_SCHEMA, EXAMPLES_SCHEMA, QUARANTINE_SCHEMA
from defsentflow.dictionary.split import assign_split
from defsentflow.dictionary.store import load_dictionary, load_examples, resolve_dictionary
from defsentflow.dictionary.tsv import read_tsv
from defsentflow.dictionary.validate import MAX_CHARS, check_record, check_text
from defsentflow.dictionary.variants import whole_token_filter
from defsentflow.dictionary.wiktextract import read_wiktextract

__all__ = [
    "DEFINITIONS_SCHEMA",
    "EXAMPLES_SCHEMA",
    "MAX_CHARS",
    "QUARANTINE_SCHEMA",
    "READERS",
    "SOURCE_KINDS",
    "SPLITS",
    "VARIANTS",
    "DefinitionRecord",
    "DictionaryArtifact",
    "DictionaryConfig",
    "DictionaryPlan",
    "IngestResult",
    "MergedDictionary",
    "QuarantineReason",
    "Record",
    "RejectedRecord",
    "SourceCounts",
    "SourceKind",
    "SourceSpec",
    "Split",
    "Variant",
    "assign_split",
    "build_dictionary",
    "check_record",
    "check_text",
    "ingest_dictionary",
    "load_dictionary",
    "load_examples",
    "merge_records",
    "oewn_files",
    "plan_dictionary",
    "read_jsonl",
    "read_oewn",
    "read_oxford",
    "read_wiktextract",
    "read_tsv",
    "register_dictionary",
    "resolve_dictionary",
    "whole_token_filter",
]
