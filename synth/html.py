"""A minimal Markdown → HTML renderer for the report (headings, paragraphs, lists, tables, images, code)."""

from __future__ import annotations

import html
import re

__all__ = ["markdown_to_html"]

_STYLE = """body{font-family:sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:90%;display:block;overflow-x:auto;max-width:100%}td,th{border:1px solid #bbb;padding:.25em .5em}
th{background:#eee}td.num{text-align:right}code{background:#f4f4f4;padding:0 .2em}img{max-width:100%}
.missing{color:#a40}"""


def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", r'<img alt="\1" src="\2">', text)
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return text


def markdown_to_html(md: str, title: str) -> str:
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_STYLE}</style></head><body>"]
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            out.append("<table>")
            for k, r in enumerate(rows):
                if k == 1 and all(re.fullmatch(r":?-+:?", c) for c in r):
                    continue
                tag = "th" if k == 0 else "td"
                cells = "".join(f"<{tag}{' class=num' if tag == 'td' and re.fullmatch(r'[-+0-9.,e×x%]+', c) else ''}>"
                                f"{_inline(c)}</{tag}>" for c in r)
                out.append(f"<tr>{cells}</tr>")
            out.append("</table>")
            continue
        elif line.startswith("- "):
            out.append("<ul>")
            while i < len(lines) and lines[i].startswith("- "):
                out.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("</ul>")
            continue
        elif line.strip():
            para = [line]
            while i + 1 < len(lines) and lines[i + 1].strip() and not re.match(r"[#|]|- ", lines[i + 1]):
                i += 1
                para.append(lines[i])
            out.append(f"<p>{_inline(' '.join(para))}</p>")
        i += 1
    out.append("</body></html>")
    return "\n".join(out) + "\n"
