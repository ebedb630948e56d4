"""The report's HTML page (synth/html.py on markdown-it-py): headings, tables with right-aligned numbers, lists,
images, code and emphasis, and text escaped."""

from vrex.synth.html import markdown_to_html


def test_the_report_markdown_renders_to_html():
    md = ("# Figures <tiny>\n\nA **bold** `code` [link](a.html) line\ncontinued.\n\n"
          "| block | area µm² | note |\n|---|---|---|\n| hcu | 1,234.5 | ok |\n| wtu | — | <b>x</b> |\n\n"
          "- one\n- two\n\n![plot](p.png)\n")
    page = markdown_to_html(md, "vrex & co")
    assert page.startswith("<!DOCTYPE html>") and "<title>vrex &amp; co</title>" in page and "td.num" in page
    assert "<h1>Figures &lt;tiny&gt;</h1>" in page
    assert "<strong>bold</strong>" in page and "<code>code</code>" in page and '<a href="a.html">link</a>' in page
    assert "<th>block</th>" in page and '<td class="num">1,234.5</td>' in page and "<td>hcu</td>" in page
    assert "<td>—</td>" in page and "&lt;b&gt;x&lt;/b&gt;" in page          # no raw HTML passes through
    assert "<li>one</li>" in page and '<img src="p.png" alt="plot" />' in page
    assert page.rstrip().endswith("</body></html>")
