"""Strip the Project Gutenberg header and licence from an e-book's text."""

from __future__ import annotations

import re

__all__ = ["strip_gutenberg"]

# "*** START OF THIS PROJECT GUTENBERG EBOOK ... ***", "*** START OF THE PROJECT GUTENBERG EBOOK ..."
# and the older "***START OF THE PROJECT GUTENBERG EBOOK" without the closing stars.
_START = re.compile(r"^\s*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG\b.*$", re.IGNORECASE | re.MULTILINE)
_END = re.compile(r"^\s*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG\b.*$", re.IGNORECASE | re.MULTILINE)
# Lines next to the markers that belong to Gutenberg, not to the book.
_PRODUCED_BY = re.compile(r"\A\s*(?:Produced by|Transcribed by|E-text prepared by)[^\n]*(?:\n[^\n]+)*\n?", re.IGNORECASE)
_END_OF = re.compile(r"\n\s*End of (?:the )?Project Gutenberg(?:'s)?\b[^\n]*\s*\Z", re.IGNORECASE)


def strip_gutenberg(text: str) -> tuple[str, bool]:
    """Keep only the book between the ``*** START OF`` and ``*** END OF`` markers.

    Text without a start marker is returned unchanged. The "Produced by ..." paragraph right after
    the start marker and the "End of the Project Gutenberg EBook ..." line right before the end
    marker go too.

    Args:
        text: the whole file, newlines normalised to ``\\n``.

    Returns:
        ``(text, stripped)`` where ``stripped`` says whether a marker was found.

    Example:
        >>> strip_gutenberg("licence\\n*** START OF THE PROJECT GUTENBERG EBOOK X ***\\nBook.\\n"
        ...                 "*** END OF THE PROJECT GUTENBERG EBOOK X ***\\nlicence")
        ('Book.', True)
    """
    start = _START.search(text)
    end = _END.search(text, start.end() if start else 0)
    if not start and not end:
        return text, False
    body = text[start.end() if start else 0 : end.start() if end else len(text)]
    if start:
        body = _PRODUCED_BY.sub("", body.lstrip("\n"), count=1)
    if end:
        body = _END_OF.sub("", body.rstrip(), count=1)
    return body.strip(), True
