"""Reader for the Wiktionary extract of wiktextract (the JSONL files distributed by kaikki.org).

One JSON object per line, per word and part of speech: ``word``, ``pos``, ``lang_code`` and
``senses``, each sense with ``glosses`` (a list of strings), ``tags`` and ``examples`` (objects
with a ``text``). The file is streamed line by line, so a 20 GB extract is never held in memory.

Decisions (also in the README):

- Only objects whose ``lang_code`` is the requested one (``en`` by default) are read; the others
  are skipped without a record (an all-language extract is mostly other languages).
- A *multi-gloss* sense is a sub-sense: wiktextract lists its parents' glosses first and its own
  last. The definition is the last gloss; the parents are kept as ``parent_glosses`` metadata
  (each parent is a sense of its own in the extract, so it is ingested as a definition too).
- *Form-of* and *alt-of* senses ("plural of dog", "alternative spelling of colour"; a ``form_of``
  or ``alt_of`` key, or the tag ``form-of``/``alt-of``) say which word a form belongs to, not what
  it means: they are skipped, as are senses with no gloss (tag ``no-gloss``). Skipped senses are
  not records, so they are counted nowhere; the reader's ``stats`` (optional) counts them.
- A line that is not JSON, not an object, or has no string ``word`` or no ``senses`` list is
  quarantined as ``malformed`` with its line number; a malformed sense (glosses not a list of
  strings, examples not objects with a text) is quarantined on its own, naming the sense's index.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from defsentflow.dictionary.lines import iter_json_lines
from defsentflow.dictionary.records import DefinitionRecord, Record, RejectedRecord

__all__ = ["read_wiktextract", "DEFAULT_LANG_CODE", "SKIPPED_TAGS"]

DEFAULT_LANG_CODE = "en"
SKIPPED_TAGS = frozenset({"form-of", "alt-of", "no-gloss"})


def read_wiktextract(path: str | os.PathLike, source: str = "wiktextract", *, lang_code: str = DEFAULT_LANG_CODE,
                     stats: dict[str, int] | None = None) -> Iterator[Record]:
    """Stream the definitions of one wiktextract JSONL file, in the language ``lang_code``.

    ``stats``, if given, is filled with how many objects were skipped for their language
    (``other_language``) and how many senses were skipped as ``form_of``/``alt_of``/``no_gloss``.

    Example:
        >>> next(read_wiktextract("kaikki.org-dictionary-English.jsonl"))
        DefinitionRecord(entry='dog', definition='A mammal, Canis familiaris ...', pos='noun', ...)
    """
    file = str(path)
    stats = stats if stats is not None else {}
    for item in iter_json_lines(path, source, _object_problem):
        if isinstance(item, RejectedRecord):
            yield item
            continue
        no, text, obj = item
        if obj.get("lang_code") != lang_code:
            stats["other_language"] = stats.get("other_language", 0) + 1
            continue
        pos = obj.get("pos") if isinstance(obj.get("pos"), str) else None
        for i, sense in enumerate(obj["senses"]):
            rec = _sense_record(obj["word"], pos, i, sense, source, file, no, text, stats)
            if rec is not None:
                yield rec


def _object_problem(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    if not isinstance(obj.get("word"), str):
        return "missing key 'word'" if "word" not in obj else f"'word' must be a string, got {type(obj['word']).__name__}"
    if not isinstance(obj.get("senses"), list):
        return "missing key 'senses'" if "senses" not in obj else "'senses' must be a list"
    return None


def _sense_record(word: str, pos: str | None, i: int, sense: Any, source: str, file: str, no: int, text: str,
                  stats: dict[str, int]) -> Record | None:
    """Sense ``i`` of a line as a record, its rejection, or None when it is skipped (counted in ``stats``)."""
    if not isinstance(sense, dict):
        return RejectedRecord(source, file, no, "malformed", text, f"sense {i}: expected an object, got {type(sense).__name__}")
    tags = sense.get("tags") or []
    if tags and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        return RejectedRecord(source, file, no, "malformed", text, f"sense {i}: 'tags' must be a list of strings")
    skip = ("form_of" if "form_of" in sense else "alt_of" if "alt_of" in sense else
            next((t.replace("-", "_") for t in tags if t in SKIPPED_TAGS), None) if tags else None)
    glosses = sense.get("glosses")
    if skip is None and not glosses:
        skip = "no_gloss"
    if skip is not None:
        stats[skip] = stats.get(skip, 0) + 1
        return None
    if not isinstance(glosses, list) or not all(isinstance(g, str) for g in glosses):
        return RejectedRecord(source, file, no, "malformed", text, f"sense {i}: 'glosses' must be a list of strings")
    examples = sense.get("examples") or ()
    if examples and (not isinstance(examples, list)
                     or not all(isinstance(e, dict) and isinstance(e.get("text"), str) for e in examples)):
        return RejectedRecord(source, file, no, "malformed", text, f"sense {i}: 'examples' must be objects with a 'text'")
    meta: dict[str, Any] | None = None
    if len(glosses) > 1 or tags:
        meta = {}
        if len(glosses) > 1:
            meta["parent_glosses"] = glosses[:-1]
        if tags:
            meta["tags"] = tags
    return DefinitionRecord(word, glosses[-1], source, file, no, pos=pos,
                            examples=tuple(e["text"] for e in examples) if examples else (), meta=meta)
