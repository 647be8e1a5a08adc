"""PDF text page by page with PDFium (``pypdfium2``), OCR for pages that are only images.

Each page's text is read line by line with each line's box, so two-column pages are read
column by column (:func:`rag_plugin.files.layout.reading_order`); then headers and footers
repeated across pages are dropped and words hyphenated at a line end joined.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import PurePath
from typing import Any

import pypdfium2
import pypdfium2.raw as pdfium_c

from rag_plugin.exceptions import CorruptDocumentError, EncryptedDocumentError, TooManyPagesError
from rag_plugin.files import ocr
from rag_plugin.files.detect import PDF, named
from rag_plugin.files.document import DocumentBuilder, ExtractedDocument
from rag_plugin.files.layout import Line, drop_running_lines, join_hyphenated, reading_order
from rag_plugin.files.limits import ExtractionLimits

# PDFium's load errors that mean "a password is needed" or "a security handler it lacks".
_ENCRYPTED = (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY)
_IMAGES = (pdfium_c.FPDF_PAGEOBJ_IMAGE,)
_TITLE_MAX = 200
_PDF_DATE = re.compile(
    r"(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:([Zz])|([+-])(\d{2})'?(\d{2})?'?)?"
)


@dataclass
class _PageRead:
    lines: list[str]
    has_image: bool
    needs_ocr: bool = False
    ocr: bool = False


def extract_pdf(data: bytes, *, limits: ExtractionLimits, filename: str = "") -> ExtractedDocument:
    """The PDF's text with a page per PDF page.

    Raises :class:`EncryptedDocumentError` for a PDF that needs a password,
    :class:`CorruptDocumentError` for one PDFium cannot read and :class:`TooManyPagesError`
    for one with more than ``limits.max_pages`` pages.
    """
    document = _open(data, filename)
    try:
        count = len(document)
        if count > limits.max_pages:
            raise TooManyPagesError(
                f"The PDF{named(filename)} has {count} pages, more than the limit of "
                f"{limits.max_pages}; split it into parts of at most {limits.max_pages} pages."
            )
        if count == 0:
            raise CorruptDocumentError(f"The PDF{named(filename)} has no pages.")
        can_ocr = limits.ocr and ocr.tesseract_available()
        read = [_read_page(document, index, can_ocr) for index in range(count)]
        info = document.get_metadata_dict(skip_empty=True)
    except pypdfium2.PdfiumError as exc:
        raise _corrupt(exc, filename) from exc
    finally:
        document.close()
    kept = drop_running_lines([page.lines for page in read])
    builder = DocumentBuilder()
    for number, (page, lines) in enumerate(zip(read, kept, strict=True), start=1):
        if number > 1:
            builder.new_page()
        builder.set_page(has_image=page.has_image, needs_ocr=page.needs_ocr, ocr=page.ocr)
        builder.add_block(join_hyphenated("\n".join(lines)))
    title = info.get("Title", "").strip() or _first_line(read) or PurePath(filename).stem
    return builder.build(title=title, media_type=PDF, metadata=_metadata(info))


def _first_line(pages: list[_PageRead]) -> str:
    """The first line of text as read (a running header included: it often is the title)."""
    for page in pages:
        for line in page.lines:
            if line.strip():
                return " ".join(line.split())[:_TITLE_MAX]
    return ""


def _open(data: bytes, filename: str) -> pypdfium2.PdfDocument:
    try:
        return pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        if getattr(exc, "err_code", None) in _ENCRYPTED:
            raise EncryptedDocumentError(
                f"The PDF{named(filename)} is encrypted and needs a password to be read; "
                "upload a copy without the password."
            ) from exc
        raise _corrupt(exc, filename) from exc


def _corrupt(exc: pypdfium2.PdfiumError, filename: str) -> CorruptDocumentError:
    return CorruptDocumentError(
        f"The PDF{named(filename)} is damaged and cannot be read: {str(exc).rstrip('.')}. "
        "Upload an undamaged copy."
    )


def _read_page(document: pypdfium2.PdfDocument, index: int, can_ocr: bool) -> _PageRead:
    """One page's lines in reading order; OCR'd (or marked) when it has no text layer."""
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            lines = reading_order(list(_lines(textpage)))
        finally:
            textpage.close()
        has_image = next(page.get_objects(filter=_IMAGES), None) is not None
        texts = [line.text for line in lines]
        if any(text.strip() for text in texts) or not has_image:
            return _PageRead(texts, has_image)
        if not can_ocr:
            return _PageRead([], has_image, needs_ocr=True)
        recognised = ocr.recognise(ocr.render_page(page))
        if recognised is None:
            return _PageRead([], has_image, needs_ocr=True)
        return _PageRead(recognised.split("\n"), has_image, ocr=True)
    finally:
        page.close()


def _lines(textpage: pypdfium2.PdfTextPage) -> Iterator[Line]:
    """The text page's lines in content order, each with the box of its first and last
    visible characters (PDFium separates lines with CR LF)."""
    text = textpage.get_text_range()
    position = 0  # in PDFium's characters, which are UTF-16 code units
    for content in text.split("\r\n"):
        visible = [i for i, char in enumerate(content) if not char.isspace()]
        if visible:
            units = _utf16_offsets(content)
            boxes = [textpage.get_charbox(position + units[i]) for i in (visible[0], visible[-1])]
            yield Line(
                content,
                left=min(box[0] for box in boxes),
                bottom=min(box[1] for box in boxes),
                right=max(box[2] for box in boxes),
                top=max(box[3] for box in boxes),
            )
        position += _utf16_length(content) + 2


def _utf16_offsets(content: str) -> list[int]:
    offsets = []
    unit = 0
    for char in content:
        offsets.append(unit)
        unit += 2 if ord(char) > 0xFFFF else 1
    return offsets


def _utf16_length(content: str) -> int:
    return len(content) + sum(1 for char in content if ord(char) > 0xFFFF)


def _metadata(info: dict[str, str]) -> dict[str, Any]:
    """The PDF's author and creation date (ISO 8601), where it records them."""
    metadata: dict[str, Any] = {}
    author = info.get("Author", "").strip()
    if author:
        metadata["author"] = author
    created = pdf_date(info.get("CreationDate", ""))
    if created is not None:
        metadata["created"] = created
    return metadata


def pdf_date(value: str) -> str | None:
    """A PDF date (``D:YYYYMMDDHHmmSS+HH'mm'``, every part after the year optional) in ISO
    8601, or None when it is not one."""
    match = _PDF_DATE.match(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, utc, sign, off_h, off_m = match.groups()
    zone = None
    if utc:
        zone = UTC
    elif sign:
        offset = timedelta(hours=int(off_h), minutes=int(off_m or 0))
        zone = timezone(offset if sign == "+" else -offset)
    try:
        moment = datetime(
            int(year),
            int(month or 1),
            int(day or 1),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            tzinfo=zone,
        )
    except ValueError:
        return None
    return moment.isoformat()
