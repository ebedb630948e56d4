"""The report's Markdown → HTML page: markdown-it-py (CommonMark with tables) and the report's style sheet; a table
cell holding only a number is right-aligned (class ``num``)."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

__all__ = ["markdown_to_html"]

_STYLE = """body{font-family:sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:90%;display:block;overflow-x:auto;max-width:100%}td,th{border:1px solid #bbb;padding:.25em .5em}
th{background:#eee}td.num{text-align:right}code{background:#f4f4f4;padding:0 .2em}img{max-width:100%}
.missing{color:#a40}"""
_NUMBER = re.compile(r"[-+0-9.,e×x%]+")


def _numeric_cells(state) -> None:
    """Core rule: ``class="num"`` on a ``<td>`` whose inline content is a number."""
    tokens = state.tokens
    for i, t in enumerate(tokens[:-1]):
        if t.type == "td_open" and tokens[i + 1].type == "inline" and _NUMBER.fullmatch(tokens[i + 1].content):
            t.attrSet("class", "num")


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.core.ruler.push("vrex_numeric_cells", _numeric_cells)
    return md


def markdown_to_html(md: str, title: str) -> str:
    """A standalone HTML page of the Markdown ``md`` (raw HTML in it is escaped, not passed through)."""
    body = _renderer().render(md)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>\n{body}</body></html>\n")
