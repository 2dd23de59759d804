r"""Safe Markdown and HTML for reports: every string from a config, the catalog or an error is
escaped before it is put into Markdown, and the Markdown is rendered with raw HTML off.

Two layers, so neither alone has to be perfect: :func:`md_text` backslash-escapes the characters
that could open HTML, links or emphasis in ``report.md`` (any CommonMark viewer shows them as
text), and :func:`render_html` renders with markdown-it-py's ``html=False``, which writes any
raw tag that is left as text. Wide tables are wrapped in a box that scrolls sideways.

Example:
    >>> print(md_text("<img src=x onerror=alert(1)>"))
    \<img src=x onerror=alert(1)\>
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

__all__ = ["Markdown", "escape_html", "inline_images", "md_code", "md_text", "render_html"]


class Markdown(str):
    """A string that already is safe Markdown (made by :func:`md_code` or :func:`md_text`): table
    cells keep it as it is."""


_SPECIAL = re.compile(r"([\\`<>&|\[\]])")   # HTML, code spans, table cells, links


def md_text(value: Any) -> str:
    """``value`` as inert Markdown text on one line (CommonMark backslash escapes)."""
    text = " ".join(str(value).split())
    return Markdown(_SPECIAL.sub(r"\\\1", text))


def md_code(value: Any) -> str:
    """``value`` as an inline code span (backticks inside become quotes; one line)."""
    text = " ".join(str(value).split()).replace("`", "'").replace("|", "\\|")
    return Markdown(f"`{text}`")


def _table_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return '<div class="table-box">\n<table>\n'


def _table_close(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return "</table>\n</div>\n"


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False, "linkify": False, "typographer": False}).enable("table")
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("table_close", _table_close)
    return md


def render_html(markdown_text: str) -> str:
    """HTML of ``markdown_text`` with raw HTML written as text and tables in a scrolling box."""
    return _renderer().render(markdown_text)


def escape_html(value: Any) -> str:
    """Text for an HTML template."""
    return html.escape(str(value), quote=True)


_IMAGE = re.compile(r"!\[([^\]]*)\]\((img/[A-Za-z0-9._/-]+\.png)\)")


def inline_images(markdown: str, base: Path) -> str:
    """``markdown`` with each of the report's own images (``![...](img/x.png)``) embedded as a
    ``data:`` URI: the Prefect UI shows an artifact's Markdown without its folder, so a relative
    image is broken there. Only files under ``base/img`` are read."""
    folder = (base / "img").resolve()

    def embed(m: re.Match) -> str:
        path = (base / m.group(2)).resolve()
        if not path.is_relative_to(folder) or not path.is_file():
            return m.group(0)
        return f"![{m.group(1)}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode('ascii')})"

    return _IMAGE.sub(embed, markdown)

