"""DOCX text with ``python-docx``: paragraphs and tables in document order, headings as
sections, explicit page breaks as pages.

A DOCX has no pages of its own (Word lays them out when it renders), so a page here ends
only where the author forced one: a page break or a paragraph set to start a new page. The
``w:lastRenderedPageBreak`` marks Word leaves behind are where a page ended the last time
some renderer laid the document out, not part of the document, and are ignored.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from typing import Any

import docx
from docx.document import Document
from docx.opc.exceptions import PackageNotFoundError
from docx.oxml.ns import qn
from lxml import etree

from rag_plugin.exceptions import CorruptDocumentError, DecompressionBombError
from rag_plugin.files.detect import DOCX, named
from rag_plugin.files.document import DocumentBuilder, ExtractedDocument
from rag_plugin.files.limits import MIB, ExtractionLimits

_HEADING_STYLE = re.compile(r"Heading ([1-9])")
_RATIO_CHECKED_FROM = 1 * MIB
"""Members smaller than this cannot be a bomb whatever their ratio (a run of spaces in a
small XML part compresses 100-fold), so only larger ones are held to the ratio."""

_P, _TBL, _SDT, _SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")
_TR, _TC, _T, _TAB, _BR, _CR = (qn(tag) for tag in ("w:tr", "w:tc", "w:t", "w:tab", "w:br", "w:cr"))
_NO_BREAK_HYPHEN, _TYPE, _VAL = qn("w:noBreakHyphen"), qn("w:type"), qn("w:val")
_PAGE_BREAK_BEFORE, _PSTYLE = qn("w:pageBreakBefore"), qn("w:pStyle")
_IMAGES = (qn("w:drawing"), qn("w:pict"))
# Text that is not the document's: a tracked move's old place, and the copy of a drawing's
# text box kept for readers without drawings (Word writes every text box twice).
_NOT_TEXT = (
    qn("w:moveFrom"),
    "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback",
)
_PAGE_BREAK = object()
"""Yielded between a paragraph's pieces of text where an explicit page break stands."""


def extract_docx(data: bytes, *, limits: ExtractionLimits, filename: str = "") -> ExtractedDocument:
    """The document's text, a page per explicit page break, a section per heading.

    Raises :class:`DecompressionBombError` for an archive that would expand beyond
    ``limits`` and :class:`CorruptDocumentError` for one that ``python-docx`` cannot read.
    """
    check_archive(data, limits, filename)
    try:
        document = docx.Document(io.BytesIO(data))
        headings = _heading_levels(document)
        builder = DocumentBuilder()
        first_heading = _lay_out(document.element.body, headings, builder)
        properties = document.core_properties
        title = (properties.title or "").strip() or first_heading
        metadata = _metadata(properties.author, properties.created)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, etree.Error) as exc:
        raise CorruptDocumentError(
            f"The DOCX{named(filename)} is damaged and cannot be read: python-docx failed "
            f"with {type(exc).__name__}: {exc}. Upload an undamaged copy."
        ) from exc
    return builder.build(title=title, media_type=DOCX, metadata=metadata)


def check_archive(data: bytes, limits: ExtractionLimits, filename: str = "") -> None:
    """Refuse an archive that would decompress to more than ``limits.max_unzipped_bytes``,
    or with a large member compressed more than ``limits.max_compression_ratio`` times,
    before anything is decompressed (zipfile stops a member at its declared size)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptDocumentError(
            f"The DOCX{named(filename)} is not a readable ZIP archive: {exc}. Upload an "
            "undamaged copy."
        ) from exc
    total = sum(member.file_size for member in members)
    if total > limits.max_unzipped_bytes:
        raise DecompressionBombError(
            f"The DOCX{named(filename)} would decompress to {total} bytes, more than the "
            f"limit of {limits.max_unzipped_bytes}; no real document of {len(data)} bytes "
            "does that."
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size >= _RATIO_CHECKED_FROM and ratio > limits.max_compression_ratio:
            raise DecompressionBombError(
                f"The DOCX{named(filename)} holds {member.filename!r}, compressed "
                f"{ratio:.0f} times ({member.compress_size} bytes for {member.file_size}), "
                f"more than the limit of {limits.max_compression_ratio}; it is not a real "
                "document."
            )


def _heading_levels(document: Document) -> dict[str, int]:
    """Paragraph style id → heading level: "Title" is 0, "Heading N" is N."""
    levels: dict[str, int] = {}
    for style in document.styles:
        name = style.name or ""
        match = _HEADING_STYLE.fullmatch(name)
        if name == "Title":
            levels[style.style_id] = 0
        elif match:
            levels[style.style_id] = int(match.group(1))
    return levels


def _lay_out(body: Any, headings: dict[str, int], builder: DocumentBuilder) -> str:
    """Add the body's paragraphs and tables to ``builder`` in order; return the first
    Title or Heading 1 paragraph's text (for a document without a title)."""
    first_heading = ""
    for element in _blocks(body):
        if element.tag == _P and _starts_page(element):
            builder.new_page()
        if any(True for _ in element.iter(*_IMAGES)):
            builder.set_page(has_image=True)
        if element.tag == _TBL:
            builder.add_block("\n".join(_table_rows(element)))
            continue
        level = headings.get(_style_id(element) or "")
        pieces: list[str] = []
        for piece in _paragraph_pieces(element):
            if piece is _PAGE_BREAK:
                builder.add_block("".join(pieces), heading_level=level)
                builder.new_page()
                pieces = []
            else:
                pieces.append(str(piece))
        text = "".join(pieces)
        builder.add_block(text, heading_level=level)
        if not first_heading and level in (0, 1):
            first_heading = text.strip()
    return first_heading


def _blocks(body: Any) -> Iterator[Any]:
    """The body's paragraphs and tables in order, content controls opened up."""
    for child in body.iterchildren():
        if child.tag in (_P, _TBL):
            yield child
        elif child.tag == _SDT:
            for content in child.iterchildren(_SDT_CONTENT):
                yield from _blocks(content)


def _paragraph_pieces(paragraph: Any) -> Iterator[object]:
    """A paragraph's text pieces in order, :data:`_PAGE_BREAK` where a page break stands."""
    for node in paragraph.iter(_T, _TAB, _BR, _CR, _NO_BREAK_HYPHEN):
        if any(True for _ in node.iterancestors(*_NOT_TEXT)):
            continue
        if node.tag == _T:
            yield node.text or ""
        elif node.tag == _TAB:
            yield "\t"
        elif node.tag == _NO_BREAK_HYPHEN:
            yield "-"
        elif node.tag == _BR and node.get(_TYPE) == "page":
            yield _PAGE_BREAK
        else:
            yield "\n"


def _table_rows(table: Any) -> Iterator[str]:
    """One line per row, its cells' text joined by " | " (rows of empty cells skipped); a
    nested table's text stays in the cell that holds it."""
    for row in table.iterchildren(_TR):
        cells = [
            " ".join(_paragraph_text(p) for p in cell.iter(_P)) for cell in row.iterchildren(_TC)
        ]
        cells = [" ".join(cell.split()) for cell in cells]
        if any(cells):
            yield " | ".join(cells)


def _paragraph_text(paragraph: Any) -> str:
    return "".join(str(piece) for piece in _paragraph_pieces(paragraph) if piece is not _PAGE_BREAK)


def _style_id(paragraph: Any) -> str | None:
    style = paragraph.find(f"{qn('w:pPr')}/{_PSTYLE}")
    return None if style is None else style.get(_VAL)


def _starts_page(paragraph: Any) -> bool:
    found = paragraph.find(f"{qn('w:pPr')}/{_PAGE_BREAK_BEFORE}")
    return found is not None and found.get(_VAL) not in ("0", "false", "off")


def _metadata(author: str | None, created: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if author and author.strip():
        metadata["author"] = author.strip()
    if created is not None:
        metadata["created"] = created.isoformat()
    return metadata
