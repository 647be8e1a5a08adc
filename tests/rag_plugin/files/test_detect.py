"""The media type comes from the content; a file name may only refine text."""

from __future__ import annotations

import pytest

from rag_plugin.exceptions import CorruptDocumentError, UnsupportedFileTypeError
from rag_plugin.files.detect import (
    DOCX,
    HTML,
    JSON,
    JSONL,
    MARKDOWN,
    PDF,
    TEXT,
    detect_media_type,
)
from tests.rag_plugin.files import makers

SUPPORTED = "PDF, DOCX, HTML, Markdown, plain text, JSON, JSON Lines"


@pytest.mark.parametrize(
    ("data", "filename", "expected"),
    [
        (makers.simple_pdf([["x"]]), "notes.txt", PDF),
        (makers.report_docx(), "report.pdf", DOCX),
        (b"<!DOCTYPE html><html><body>x</body></html>", "page.md", HTML),
        (b"\xef\xbb\xbf\n  <HTML lang=en><p>x</p></HTML>", "", HTML),
        (b"\t<head><title>x</title></head>", "x.json", HTML),
        (b"<body>x</body>", "", HTML),
        (b"# Title\n\ntext", "readme.md", MARKDOWN),
        (b"# Title\n\ntext", "README.MARKDOWN", MARKDOWN),
        (b"# Title\n\ntext", "", TEXT),
        (b'{"a": 1}', "data.json", JSON),
        (b'{"a": 1}\n{"a": 2}\n', "rows.jsonl", JSONL),
        ("caf\u00e9 \u2013 \U0001f9a6".encode(), "otter.pdf", TEXT),
        (b"<p>a fragment is text</p>", "", TEXT),
    ],
)
def test_media_type_is_read_from_the_content(data: bytes, filename: str, expected: str) -> None:
    assert detect_media_type(data, filename) == expected


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (makers.png(makers.chart_image()).getvalue(), "a PNG image"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "a legacy Office file (.doc, .xls)"),
        (bytes(range(256)) * 4, "neither a document nor UTF-8 text"),
        (b"text with a NUL\x00 byte", "neither a document nor UTF-8 text"),
    ],
)
def test_other_content_is_refused_with_the_supported_types(data: bytes, what: str) -> None:
    with pytest.raises(UnsupportedFileTypeError) as caught:
        detect_media_type(data, "upload.pdf")

    assert str(caught.value) == (
        f"The file 'upload.pdf' is {what}, not a type that can be read; upload one of: {SUPPORTED}."
    )
    assert caught.value.code == "UNSUPPORTED_FILE_TYPE"


def test_a_zip_that_is_not_a_docx_is_unsupported() -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")

    with pytest.raises(UnsupportedFileTypeError, match="a ZIP archive that is not a DOCX"):
        detect_media_type(buffer.getvalue(), "letter.docx")


def test_a_damaged_zip_is_corrupt() -> None:
    with pytest.raises(CorruptDocumentError, match="damaged ZIP archive"):
        detect_media_type(makers.report_docx()[:200], "report.docx")
