"""A file's media type from its content: a name can lie, and a parser fed the wrong type
fails in ways that say nothing useful to the person who uploaded the file."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from pathlib import PurePath
from types import MappingProxyType

from rag_plugin.exceptions import CorruptDocumentError, UnsupportedFileTypeError

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
HTML = "text/html"
MARKDOWN = "text/markdown"
TEXT = "text/plain"
JSON = "application/json"
JSONL = "application/jsonl"

SUPPORTED_MEDIA_TYPES: Mapping[str, str] = MappingProxyType(
    {
        PDF: "PDF",
        DOCX: "DOCX",
        HTML: "HTML",
        MARKDOWN: "Markdown",
        TEXT: "plain text",
        JSON: "JSON",
        JSONL: "JSON Lines",
    }
)
"""Every media type :func:`detect_media_type` returns, with the name a person knows it by."""

# Text whose name says more than "text": the name may refine text, never pick a binary type.
_TEXT_BY_SUFFIX: Mapping[str, str] = MappingProxyType(
    {".md": MARKDOWN, ".markdown": MARKDOWN, ".json": JSON, ".jsonl": JSONL}
)

_HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body")
_BOM = b"\xef\xbb\xbf"
# A PDF reader accepts the header anywhere in the first kilobyte (PDF 1.7, annex H).
_PDF_HEADER_WINDOW = 1024

# Only to name what an unsupported file seems to be.
_KNOWN_OTHERS = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\xd0\xcf\x11\xe0", "a legacy Office file (.doc, .xls)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"PK\x03\x04", "a ZIP archive that is not a DOCX"),
)


def supported_types_sentence() -> str:
    """The supported types as a person reads them, e.g. for an error message."""
    return ", ".join(SUPPORTED_MEDIA_TYPES.values())


def detect_media_type(data: bytes, filename: str = "") -> str:
    """The media type of ``data``, one of :data:`SUPPORTED_MEDIA_TYPES`.

    PDF, DOCX and HTML are told by their first bytes; any other valid UTF-8 without NUL
    bytes is text, which ``filename``'s extension may refine to Markdown, JSON or JSON
    Lines. Anything else raises :class:`UnsupportedFileTypeError` naming the supported types.
    """
    if b"%PDF-" in data[:_PDF_HEADER_WINDOW]:
        return PDF
    if data.startswith(b"PK\x03\x04") and _is_docx(data, filename):
        return DOCX
    if _looks_like_html(data):
        return HTML
    if _is_text(data):
        return _TEXT_BY_SUFFIX.get(PurePath(filename).suffix.lower(), TEXT)
    raise UnsupportedFileTypeError(
        f"The file{named(filename)} is {_what(data)}, not a type that can be read; "
        f"upload one of: {supported_types_sentence()}."
    )


def _is_docx(data: bytes, filename: str) -> bool:
    """Whether the ZIP archive holds a Word document's main part."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptDocumentError(
            f"The file{named(filename)} is a damaged ZIP archive (as a DOCX is) and cannot be "
            f"read: {exc}. Upload an undamaged copy."
        ) from exc


def _looks_like_html(data: bytes) -> bool:
    """WHATWG-style sniffing: an HTML tag first, after an optional BOM and whitespace."""
    head = data[:512].removeprefix(_BOM).lstrip(b" \t\r\n\f").lower()
    return head.startswith(_HTML_STARTS)


def _is_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def named(filename: str) -> str:
    """`` 'name.pdf'`` to follow "The file" in a message, or nothing when there is no name."""
    return f" {filename!r}" if filename else ""


def _what(data: bytes) -> str:
    for magic, what in _KNOWN_OTHERS:
        if data.startswith(magic):
            return what
    return "neither a document nor UTF-8 text"
