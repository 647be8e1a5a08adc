"""An HTML page's main content on one page: no navigation, banners or footers.

``trafilatura`` finds the main content (its precision mode, tables kept); where it finds
none, the page's ``<main>``, ``<article>`` or ``<body>`` is read with navigation, headers,
footers, sidebars, forms and scripts dropped. Either way one walker turns the content into
blocks, so headings become sections and each table row one line with " | " between cells.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from pathlib import PurePath
from types import MappingProxyType
from typing import Any

import lxml.etree
import lxml.html
import trafilatura

from rag_plugin.files.detect import HTML
from rag_plugin.files.document import DocumentBuilder, ExtractedDocument

_HEADINGS: Mapping[str, int] = MappingProxyType({f"h{n}": n for n in range(1, 7)})
_LISTS = frozenset({"ul", "ol", "dl", "menu"})
_BOILERPLATE = frozenset(
    {"nav", "header", "footer", "aside", "script", "style", "form", "noscript", "template"}
    | {"iframe", "svg", "button", "select", "textarea", "dialog"}
)
_SECTIONING_EDGES = frozenset({"header", "footer"})
_CONTAINERS = frozenset(
    {"div", "section", "article", "main", "body", "figure", "details", "center", "blockquote"}
    | {"p", "li", "dd", "dt", "pre", "table", "hr", "address", "fieldset", "summary"}
    | _HEADINGS.keys()
    | _LISTS
    | _BOILERPLATE
)
"""Tags that start a block of their own; anything else is inline (part of a line)."""
# trafilatura's output tags → the HTML tags that mean the same, so one walker reads both.
_FROM_TRAFILATURA: Mapping[str, str] = MappingProxyType(
    {
        "list": "ul",
        "item": "li",
        "row": "tr",
        "cell": "td",
        "quote": "blockquote",
        "lb": "br",
        "graphic": "img",
    }
)
_SPACES = re.compile(r"[^\S\n]+")


def extract_html(data: bytes, *, filename: str = "") -> ExtractedDocument:
    """The page's main content as one page; its title from ``<title>``, else the first
    ``<h1>``, else the file name."""
    builder = DocumentBuilder()
    page = _parse(data)
    title = _title(page)
    if page is not None:
        _drop_boilerplate(page)
        # trafilatura rewrites the tree it is given; the fallback needs the page as it was.
        content = _main_content(copy.deepcopy(page))
        _walk(content if content is not None else _fallback_content(page), builder)
    title = title or PurePath(filename).stem.replace("_", " ").replace("-", " ").strip()
    return builder.build(title=title, media_type=HTML)


def _parse(data: bytes) -> Any:
    """The page's tree, or None for a page of nothing but whitespace and comments.

    UTF-8 is tried first: without a declared charset, libxml2 would read it as Latin-1.
    Other bytes are parsed as they are, so a declared charset is honoured.
    """
    try:
        source: str | bytes = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        source = data
    try:
        return lxml.html.document_fromstring(source)
    except ValueError:
        # A str with an XML encoding declaration is refused; the bytes are not.
        if isinstance(source, str):
            return _parse_bytes(data)
        return None


def _parse_bytes(data: bytes) -> Any:
    try:
        return lxml.html.document_fromstring(data)
    except ValueError:  # lxml's ParserError included
        return None


def _drop_boilerplate(page: Any) -> None:
    """Remove navigation, sidebars, forms and scripts, and the page's own header and footer
    (an article's header, which holds its title, stays)."""
    for element in list(page.iter(*_BOILERPLATE)):
        if element.tag in _SECTIONING_EDGES and _in_content(element):
            continue
        element.drop_tree()


def _in_content(element: Any) -> bool:
    parent = element.getparent()
    while parent is not None:
        if parent.tag in ("article", "main"):
            return True
        parent = parent.getparent()
    return False


def _main_content(page: Any) -> Any:
    """trafilatura's main content with its tags renamed to HTML's, or None if it found none."""
    found = trafilatura.bare_extraction(
        page,
        favor_precision=True,
        include_tables=True,
        include_comments=False,
        include_images=False,
        include_links=False,
        with_metadata=False,
    )
    body = getattr(found, "body", None)
    if body is None or not "".join(body.itertext()).strip():
        return None
    if body.tag != "body":
        # A page of one list, heading or paragraph comes back as that element alone.
        wrapper = lxml.etree.Element("body")
        wrapper.append(body)
        body = wrapper
    for element in body.iter():
        if element.tag == "head":
            rend = element.get("rend", "")
            element.tag = rend if rend in _HEADINGS else "h2"
        elif element.tag == "code" and element.getparent() is body:
            element.tag = "pre"  # a code block; inside a paragraph it is inline code
        elif element.tag in _FROM_TRAFILATURA:
            element.tag = _FROM_TRAFILATURA[element.tag]
    return body


def _fallback_content(page: Any) -> Any:
    """``<main>``, else the first ``<article>``, else ``<body>`` (boilerplate already gone)."""
    for path in ("//main", "//article", "//body"):
        found = page.xpath(path)
        if found:
            return found[0]
    return page


def _title(page: Any) -> str:
    if page is None:
        return ""
    for path in ("//title", "//h1"):
        for element in page.xpath(path):
            text = " ".join("".join(element.itertext()).split())
            if text:
                return text
    return ""


def _walk(element: Any, builder: DocumentBuilder) -> None:
    """Add ``element``'s children to ``builder``: headings as headings, tables and lists a
    line per row or item, other blocks as paragraphs; loose text between blocks too."""
    builder.add_block(_clean(element.text or ""))
    for child in element.iterchildren():
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in _HEADINGS:
            builder.add_block(_inline_text(child), heading_level=_HEADINGS[tag])
        elif tag == "table":
            builder.add_block("\n".join(_table_rows(child)))
        elif tag in _LISTS:
            builder.add_block("\n".join(_inline_text(item) for item in child.iterchildren()))
        elif tag == "pre":
            builder.add_block("".join(child.itertext()))
        elif tag in _CONTAINERS and _has_blocks(child):
            _walk(child, builder)
        elif tag:
            builder.add_block(_inline_text(child))
        builder.add_block(_clean(child.tail or ""))


def _has_blocks(element: Any) -> bool:
    return any(
        isinstance(child.tag, str) and child.tag in _CONTAINERS
        for child in element.iter()
        if child is not element
    )


def _table_rows(table: Any) -> Iterator[str]:
    """A line per row: its cells' text joined by " | " (a nested table's rows are its cell's)."""
    for row in table.iter("tr"):
        if _owning_table(row) is not table:
            continue
        cells = [_inline_text(cell).replace("\n", " ") for cell in row if cell.tag in ("td", "th")]
        if any(cells):
            yield " | ".join(cells)


def _owning_table(row: Any) -> Any:
    parent = row.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def _inline_text(element: Any) -> str:
    """The element's text with ``<br>`` as a line break and runs of spaces as one."""
    parts: list[str] = []
    _gather(element, parts)
    return _clean("".join(parts))


def _gather(node: Any, parts: list[str]) -> None:
    if node.tag == "br":
        parts.append("\n")
    elif isinstance(node.tag, str):  # not a comment or processing instruction
        parts.append(node.text or "")
    for child in node.iterchildren():
        _gather(child, parts)
        parts.append(child.tail or "")


def _clean(text: str) -> str:
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n")).strip()
