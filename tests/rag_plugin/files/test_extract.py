"""extract(): the type from the content, each format's reader, and the limits."""

from __future__ import annotations

import pytest

from rag_plugin.exceptions import (
    CorruptDocumentError,
    FileTooLargeError,
    InvalidInputError,
    UnsupportedFileTypeError,
)
from rag_plugin.files import DOCX, HTML, PDF, ExtractionLimits, extract
from rag_plugin.files import html as html_module
from tests.rag_plugin.files import makers


@pytest.mark.parametrize(
    ("data", "misleading_name", "media_type", "text"),
    [
        (makers.simple_pdf([["A PDF called notes"]]), "notes.txt", PDF, "A PDF called notes"),
        (makers.ARTICLE_HTML, "otters.pdf", HTML, "River otters"),
        (makers.report_docx(), "census.html", DOCX, "Otter census"),
    ],
)
def test_the_content_not_the_name_picks_the_reader(
    data: bytes, misleading_name: str, media_type: str, text: str
) -> None:
    document = extract(data, filename=misleading_name)

    assert document.media_type == media_type
    assert document.text.startswith(text)


def test_an_image_is_refused_naming_the_supported_types() -> None:
    png = makers.png(makers.chart_image()).getvalue()

    with pytest.raises(UnsupportedFileTypeError, match=r"is a PNG image.*upload one of: PDF, DOCX"):
        extract(png, filename="chart.pdf")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read() -> None:
    with pytest.raises(FileTooLargeError) as caught:
        extract(b"x" * 11, limits=ExtractionLimits(max_bytes=10))

    assert str(caught.value) == (
        "The file has 11 bytes, more than the limit of 10; split it into smaller files or "
        "raise max_bytes."
    )
    assert caught.value.code == "FILE_TOO_LARGE"


def test_data_must_be_bytes() -> None:
    with pytest.raises(InvalidInputError, match="File data must be bytes, got str"):
        extract("text")  # type: ignore[arg-type]


def test_a_parser_failing_in_an_unnamed_way_is_a_corrupt_file(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(data: bytes, *, filename: str = "") -> object:
        raise IndexError("list index out of range")

    monkeypatch.setattr(html_module, "extract_html", broken)

    with pytest.raises(CorruptDocumentError) as caught:
        extract(makers.ARTICLE_HTML, filename="odd.html")

    assert str(caught.value) == (
        "The HTML file 'odd.html' cannot be read: the parser failed with IndexError: list "
        "index out of range. Upload an undamaged copy."
    )
    assert "The HTML parser failed on 'odd.html'" in caplog.text
    assert "IndexError" in caplog.text  # the traceback is logged


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_bytes", 0, "max_bytes must be a positive integer, got 0."),
        ("max_pages", True, "max_pages must be a positive integer, got True."),
        ("memory_mb", 1.5, "memory_mb must be a positive integer, got 1.5."),
        ("max_compression_ratio", -1, "max_compression_ratio must be a positive integer"),
        ("timeout_s", 0, "timeout_s must be a positive number, got 0."),
        ("timeout_s", "5", "timeout_s must be a positive number, got '5'."),
    ],
)
def test_limits_refuse_values_that_cannot_work(field: str, value: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message.replace(".", r"\.")):
        ExtractionLimits(**{field: value})  # type: ignore[arg-type]
