"""A fast parser for the regular block-YAML layout of the Open English WordNet source files.

PyYAML's C loader needs 40 s or more for the 45 MB of OEWN YAML on one core; this
line-oriented parser reads the same files in about 5 s of CPU. It accepts only the subset of
YAML the OEWN export uses (block mappings and sequences, indentless sequences, plain and
single-quoted scalars folded over several lines, single-line double-quoted scalars) and
raises :class:`IrregularYamlError` on anything else, so :func:`load_yaml` falls back to
PyYAML for that file instead of guessing. All scalars are returned as strings, exactly as
``yaml.load(..., Loader=yaml.CBaseLoader)`` returns them; ``tests/dictionary/test_oewn_yaml.py``
checks that equality on the real files.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from defsentflow.config_tools import MAX_YAML_NODES, expanded_size

__all__ = ["IrregularYamlError", "Keep", "load_yaml", "parse_yaml_text", "prune", "top_level_lines"]

Keep = Mapping[int, frozenset[str] | set[str]]

log = logging.getLogger(__name__)

# Anything that starts a YAML construct this parser does not implement.
_SPECIAL_START = frozenset("&*!|>{[%@`#?")
_TRAILING_SPACE = re.compile(r"[ \r]$", re.MULTILINE)
_BAD_LINE = re.compile(r"^[ \r]*(?:\n|[#\t])", re.MULTILINE)
_TOP_KEY = re.compile(r"^(\S.*):[ ]*$", re.MULTILINE)


class IrregularYamlError(ValueError):
    """The text uses YAML this parser does not implement (the caller falls back to PyYAML)."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line


def _is_item(t: str) -> bool:
    return t[:2] == "- " or t == "-"


class _Parser:
    """Recursive descent over each line's indent and text (line number = list index + 1).

    ``keep`` maps a mapping depth (0 = top level) to the keys kept at that depth; the values of
    other keys are skipped without being decoded, which is most of the time saved.
    """

    __slots__ = ("ind", "txt", "n", "keep")

    def __init__(self, text: str, keep: Keep | None = None):
        text = text.rstrip()
        if (m := _BAD_LINE.search(text)) is not None:
            # A blank line inside a scalar is a line break, which is not folded here.
            raise IrregularYamlError(text.count("\n", 0, m.start()) + 1, "blank line, comment or tab indentation")
        lines = text.split("\n") if text else []
        txt = [line.lstrip(" ") for line in lines]
        self.ind = [len(line) - len(body) for line, body in zip(lines, txt)]
        if _TRAILING_SPACE.search(text):
            txt = [body.rstrip(" \r") for body in txt]
        self.txt = txt
        self.n = len(txt)
        self.keep = dict(keep or {})

    # -- blocks ------------------------------------------------------------------------------
    def block(self, i: int, depth: int) -> tuple[Any, int]:
        if _is_item(self.txt[i]):
            return self.seq(i, self.ind[i], depth)
        return self.mapping(i, self.ind[i], depth)

    def mapping(self, i: int, indent: int, depth: int, lines: dict[str, int] | None = None) -> tuple[dict, int]:
        out: dict[str, Any] = {}
        ind, txt, n = self.ind, self.txt, self.n
        keep = self.keep.get(depth)
        while i < n and ind[i] == indent:
            t = txt[i]
            if t[:2] == "- " or t == "-":
                break
            key, rest = self.key(i, t)
            if key in out:
                raise IrregularYamlError(i + 1, f"duplicate key {key!r}")
            if lines is not None:
                lines[key] = i + 1
            if keep is not None and key not in keep:
                i += 1
                while i < n and (ind[i] > indent or (ind[i] == indent and txt[i][:2] == "- ")):
                    i += 1
                continue
            if rest:
                out[key], i = self.scalar(rest, i, indent)
                continue
            i += 1
            if i < n and (ind[i] > indent or (ind[i] == indent and _is_item(txt[i]))):
                out[key], i = self.block(i, depth + 1)
            else:
                raise IrregularYamlError(i, f"empty value for key {key!r}")
        if i < n and ind[i] > indent:
            raise IrregularYamlError(i + 1, "unexpected indentation")
        return out, i

    def seq(self, i: int, indent: int, depth: int) -> tuple[list, int]:
        out: list[Any] = []
        ind, txt, n = self.ind, self.txt, self.n
        while i < n and ind[i] == indent and txt[i][:2] == "- ":
            rest = txt[i][2:].lstrip(" ")
            if not rest:
                raise IrregularYamlError(i + 1, "nested block under a bare '-'")
            if self.is_key(rest):
                # "- key: value" opens a mapping whose keys sit further in, where ``rest`` starts.
                ind[i] = indent + (len(txt[i]) - len(rest))
                txt[i] = rest
                value, i = self.mapping(i, ind[i], depth)
            else:
                value, i = self.scalar(rest, i, indent)
            out.append(value)
        if i < n and ind[i] > indent:
            raise IrregularYamlError(i + 1, "unexpected indentation")
        return out, i

    # -- keys and scalars --------------------------------------------------------------------
    @staticmethod
    def is_key(t: str) -> bool:
        if t[0] == "'":
            end = _closing_quote(t, 1)
            return end != -1 and t[end + 1:end + 2] == ":"
        if t[0] == '"':
            return False  # quoted-key mappings in sequences do not occur in OEWN
        return ": " in t or t.endswith(":")

    @staticmethod
    def key(i: int, t: str) -> tuple[str, str]:
        c = t[0]
        if c == "'":
            end = _closing_quote(t, 1)
            if end == -1 or t[end + 1:end + 2] != ":" or t[end + 2:end + 3] not in ("", " "):
                raise IrregularYamlError(i + 1, "bad quoted key")
            return t[1:end].replace("''", "'"), t[end + 2:].lstrip(" ")
        if c in _SPECIAL_START or c == '"':
            raise IrregularYamlError(i + 1, "unsupported key syntax")
        k, sep, rest = t.partition(": ")
        if sep:
            return k, rest.lstrip(" ")
        if t[-1] == ":":
            return t[:-1], ""
        raise IrregularYamlError(i + 1, "expected 'key: value'")

    def scalar(self, first: str, i: int, parent: int) -> tuple[str, int]:
        """Decode the scalar starting with ``first`` on line ``i``; continuation lines are those
        indented deeper than ``parent``."""
        ind = self.ind
        j = i + 1
        n = self.n
        while j < n and ind[j] > parent:
            j += 1
        c = first[0]
        if c == "'":
            text = first if j == i + 1 else " ".join([first] + self.txt[i + 1:j])
            if _closing_quote(text, 1) != len(text) - 1:
                raise IrregularYamlError(i + 1, "unterminated or trailing text after quoted scalar")
            return text[1:-1].replace("''", "'"), j
        if c == '"':
            if j != i + 1:
                raise IrregularYamlError(i + 1, "multi-line double-quoted scalar")
            return _double_quoted(first, i + 1), j
        if c in _SPECIAL_START or _is_item(first):
            raise IrregularYamlError(i + 1, "unsupported scalar syntax")
        text = first if j == i + 1 else " ".join([first] + self.txt[i + 1:j])
        if ": " in text or text[-1] == ":" or " #" in text:
            raise IrregularYamlError(i + 1, "plain scalar with ': ' or ' #'")
        return text, j


def _double_quoted(text: str, line: int) -> str:
    import yaml  # lazy: YAML loads only where a file is read

    try:
        value = yaml.load(text, Loader=_base_loader())
    except yaml.YAMLError as exc:
        raise IrregularYamlError(line, f"bad double-quoted scalar: {exc}") from None
    if not isinstance(value, str):
        raise IrregularYamlError(line, "double-quoted scalar did not decode to text")
    return value


def _base_loader():
    import yaml  # lazy: YAML loads only where a file is read

    return getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def _load_bounded(text: str) -> Any:
    """``yaml.load(text, CBaseLoader)``, refusing aliases that expand beyond the text's own size and
    nesting deeper than ``LIMITS["nesting"]`` (checked on the composed node graph, before anything
    is constructed or expanded: the constructor recurses once per level)."""
    loader = _base_loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_size(node, len(text) + MAX_YAML_NODES)  # the fallback parser only: a walk per irregular file
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _closing_quote(t: str, start: int) -> int:
    """Index of the quote closing a single-quoted scalar ('' is an escaped quote), or -1."""
    k = start
    while True:
        k = t.find("'", k)
        if k == -1:
            return -1
        if t[k + 1:k + 2] == "'":
            k += 2
            continue
        return k


def parse_yaml_text(text: str, keep: Keep | None = None, lines: dict[str, int] | None = None) -> dict[str, Any]:
    """Parse one OEWN YAML document whose top level is a mapping.

    Args:
        text: the file's text.
        keep: mapping depth (0 = top level) -> the keys kept at that depth (see :func:`prune`).
        lines: if given, filled with the 1-based line of every top-level key.

    Raises:
        IrregularYamlError: the text leaves the regular subset (callers fall back to PyYAML).
    """
    p = _Parser(text, keep)
    if p.n == 0:
        return {}
    if p.ind[0] != 0:
        raise IrregularYamlError(1, "document does not start at column 0")
    out, i = p.mapping(0, 0, 0, lines)
    if i != p.n:
        raise IrregularYamlError(i + 1, "trailing content")
    return out


def prune(data: Any, keep: Keep | None, depth: int = 0) -> Any:
    """Drop the keys ``keep`` does not list at their mapping depth (as the fast parser does).

    Depth counts mappings: a sequence's items are at the depth of the key holding the sequence.
    """
    if not keep:
        return data
    if isinstance(data, list):
        return [prune(v, keep, depth) for v in data]
    if isinstance(data, dict):
        allowed = keep.get(depth)
        return {k: prune(v, keep, depth + 1) for k, v in data.items() if allowed is None or k in allowed}
    return data


def top_level_lines(text: str) -> dict[str, int]:
    """1-based line numbers of the top-level keys, for files parsed by PyYAML."""
    out: dict[str, int] = {}
    line = 1
    pos = 0
    for m in _TOP_KEY.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        raw = m.group(1)
        try:
            key = _Parser.key(line - 1, raw + ":")[0] if raw[0] != '"' else _double_quoted(raw, line)
        except IrregularYamlError:
            continue
        out.setdefault(key, line)
    return out


def load_yaml(path: str | os.PathLike, keep: Keep | None = None, *, fast: bool = True) -> tuple[dict[str, Any], dict[str, int]]:
    """Read an OEWN YAML file: ``(mapping, top-level key -> line)``, all scalars as strings.

    Uses the fast parser and falls back to PyYAML's ``CBaseLoader`` for a file outside the
    regular subset; both give the same result.

    Raises:
        UnicodeDecodeError: the file is not valid UTF-8 (the message names the byte offset).
        ValueError: the file is not a YAML mapping (``yaml.YAMLError`` names line and column).
    """
    path = Path(path)
    text = path.read_bytes().decode("utf-8")
    if fast:
        lines: dict[str, int] = {}
        try:
            return parse_yaml_text(text, keep, lines), lines
        except IrregularYamlError as exc:
            log.info("%s: %s; parsing this file with PyYAML", path, exc)
    import yaml  # lazy: YAML loads only where a file is read

    try:
        data = _load_bounded(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return prune(data, keep), top_level_lines(text)
