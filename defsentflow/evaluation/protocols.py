"""The query protocols of the dictionary tasks: which definitions of a split are queries, one meaning
for word prediction and the reverse dictionary alike.

A protocol (:data:`defsentflow.eval_tasks.PROTOCOLS`) is a rule on the dictionary alone:

* ``unseen``: definitions of the split whose text (whitespace-normalised, case-folded: see
  :func:`normalize_definition`) occurs in no definition the model trained on, in any split and under
  any entry, of entries with at least two definitions in the split; in the order of a hash of
  (entry, definition), the first ``max_queries`` (a deterministic sample: the same dictionary always
  gives the same queries, and adding entries moves few of them);
* ``multi-definition``: every definition of the split of an entry with at least two definitions in
  the split, seen or not (on OEWN test: 8,433 of 18,768 definitions);
* ``all-definitions``: every definition of the split, seen or not (DefSent's Table 2).

The two-definition rule is the reverse dictionary's (its leave-one-out entry vector needs a second
definition); word prediction keeps it so that ``unseen`` names one query set. A task may then drop
queries it cannot score, and counts them: word prediction those whose word its head cannot predict.

Example:
    >>> q = select_queries(["a", "a", "b"], ["x", "y", "z"], ["test"] * 3, split="test", protocol="multi-definition")
    >>> q.rows, q.n_single
    ([0, 1], 1)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from defsentflow.dictionary.validate import normalize_text
from defsentflow.eval_tasks import PROTOCOLS
from defsentflow.storage.hashing import hash_text

__all__ = ["QuerySet", "normalize_definition", "order_key", "select_queries", "trained_texts"]


def order_key(entry: str, definition: str) -> str:
    """The fixed order queries are taken in: a hash of (entry, definition)."""
    return hash_text(f"{entry}\x1f{definition}")


def normalize_definition(text: str) -> str:
    """A definition as the ``unseen`` protocol compares it: de-duplication's whitespace
    normalisation, then case-folded (stricter than de-duplication: more queries count as seen)."""
    return normalize_text(text).casefold()


def trained_texts(table: pa.Table, train_splits: Sequence[str] = ("train",)) -> set[str]:
    """Normalised texts of every definition in ``train_splits``, under any entry."""
    splits = table.column("split").to_pylist()
    keep = set(train_splits)
    return {normalize_definition(d) for d, s in zip(table.column("definition").to_pylist(), splits) if s in keep}


@dataclass(frozen=True)
class QuerySet:
    """The query rows of one (split, protocol), in the protocol's order, and what was left out."""

    rows: list[int]          # indices into the dictionary's rows
    n_excluded: int = 0      # dropped because the model trained on their text (unseen)
    n_single: int = 0        # dropped because their entry has fewer definitions in the split than the protocol needs
    n_capped: int = 0        # eligible, beyond max_queries


def select_queries(entries: Sequence[str], definitions: Sequence[str], splits: Sequence[str], *, split: str,
                   protocol: str, exclude: set[str] | None = None, max_queries: int | None = 2000) -> QuerySet:
    """The query rows of ``split`` under ``protocol`` (module docstring).

    Args:
        entries, definitions, splits: the dictionary's columns.
        exclude: normalised texts the model trained on (:func:`trained_texts`); read by ``unseen``
            only, which needs it.
        max_queries: a capped protocol's sample size (None: every query); ignored by the others.
    """
    spec = PROTOCOLS.get(protocol)
    if spec is None:
        raise ValueError(f"protocol must be one of {tuple(PROTOCOLS)}, got {protocol!r}")
    if spec.unseen_only and exclude is None:
        raise ValueError("the unseen protocol needs the texts the model trained on (exclude=trained_texts(...))")
    rows = [i for i, s in enumerate(splits) if s == split]
    counts = Counter(entries[i] for i in rows)
    eligible = [i for i in rows if counts[entries[i]] >= spec.min_definitions]
    n_single = len(rows) - len(eligible)
    n_excluded = 0
    if spec.unseen_only:
        unseen = [i for i in eligible if normalize_definition(definitions[i]) not in exclude]
        n_excluded = len(eligible) - len(unseen)
        eligible = unseen
    eligible.sort(key=lambda i: order_key(entries[i], definitions[i]))
    n_capped = 0
    if spec.capped and max_queries is not None and len(eligible) > max_queries:
        n_capped = len(eligible) - max_queries
        eligible = eligible[:max_queries]
    return QuerySet(eligible, n_excluded, n_single, n_capped)
