"""The word tokeniser shared by BM25 and its rank-bm25 reference."""

from __future__ import annotations

import re

__all__ = ["tokenize"]

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lower-cased runs of word characters (Unicode aware).

    Example:
        >>> tokenize("Time Warner's profit, up 76%")
        ['time', 'warner', 's', 'profit', 'up', '76']
    """
    return _WORD.findall(text.lower())
