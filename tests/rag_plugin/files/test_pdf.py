"""PDFs made by fpdf2 and one real manual, read page by page with PDFium."""

from __future__ import annotations

import pypdfium2
import pytest

from rag_plugin.exceptions import CorruptDocumentError, EncryptedDocumentError, TooManyPagesError
from rag_plugin.files import PAGE_SEPARATOR, ExtractedDocument, ExtractionLimits, Page, extract
from rag_plugin.files.pdf import pdf_date
from tests.rag_plugin.files import makers
from tests.rag_plugin.files.conftest import FIXTURES

PAGE_3 = "\n".join([makers.TWO_COLUMN_TITLE, *makers.LEFT_COLUMN, *makers.RIGHT_COLUMN])
EXPECTED_TEXT = {
    1: makers.PAGE_1_TEXT,
    2: "\n".join(makers.PAGE_2),
    3: PAGE_3,
    5: "\n".join(makers.PAGE_5),
}


@pytest.mark.parametrize("number", sorted(EXPECTED_TEXT))
def test_each_page_has_exactly_its_own_text(report: ExtractedDocument, number: int) -> None:
    page = report.pages[number - 1]

    assert report.text[page.start : page.end] == EXPECTED_TEXT[number]


def test_pages_tile_the_text_with_the_separator(report: ExtractedDocument) -> None:
    texts = [report.text[page.start : page.end] for page in report.pages]

    assert [page.number for page in report.pages] == [1, 2, 3, 4, 5]
    assert PAGE_SEPARATOR.join(texts) == report.text
    assert report.pages[0].start == 0
    assert report.pages[-1].end == len(report.text)


def test_the_running_header_and_page_footer_are_gone(report: ExtractedDocument) -> None:
    assert makers.HEADER not in report.text
    assert "of 5" not in report.text
    # They were there to remove: PDFium reads them on every page but the scan.
    document = pypdfium2.PdfDocument(makers.report_pdf())
    raw = [document[i].get_textpage().get_text_range() for i in range(len(document))]
    assert [
        makers.HEADER in text and f"Page {n} of 5" in text for n, text in enumerate(raw, 1)
    ] == [
        True,
        True,
        True,
        False,
        True,
    ]


def test_a_word_hyphenated_at_a_line_end_is_joined(report: ExtractedDocument) -> None:
    assert "collect information on" in report.page_text(1)
    assert "infor-" not in report.text


def test_two_columns_are_read_left_then_right_though_written_right_first(
    report_pdf: bytes, report: ExtractedDocument
) -> None:
    page = pypdfium2.PdfDocument(report_pdf)[2]
    written = page.get_textpage().get_text_range()
    assert written.index(makers.RIGHT_COLUMN[0]) < written.index(makers.LEFT_COLUMN[0])

    assert report.page_text(3) == PAGE_3


def test_pages_with_pictures_are_marked(report: ExtractedDocument) -> None:
    assert [page.has_image for page in report.pages] == [False, True, False, True, False]
    assert [page.ocr for page in report.pages] == [False, False, False, True, False]
    assert report.needs_ocr_pages == ()


def test_title_author_and_creation_date_come_from_the_pdf(report: ExtractedDocument) -> None:
    assert report.title == makers.REPORT_TITLE
    assert report.media_type == "application/pdf"
    assert report.metadata == {
        "author": makers.REPORT_AUTHOR,
        "created": "2024-03-01T12:30:00+00:00",
        "page_count": 5,
    }


def test_without_a_title_the_first_line_is_the_title() -> None:
    document = extract(makers.simple_pdf([["Otter notes", "Seen at dawn."]]))

    assert document.title == "Otter notes"
    assert "author" not in document.metadata


def test_two_pages_are_too_few_to_drop_a_repeated_first_line() -> None:
    data = makers.simple_pdf([["Otter notes", "Seen at dawn."], ["Otter notes", "Gone by noon."]])

    document = extract(data)

    assert document.text == "Otter notes\nSeen at dawn.\n\nOtter notes\nGone by noon."
    assert document.pages == (Page(1, 0, 25), Page(2, 27, 52))


def test_a_real_manual_loses_its_running_header_and_page_numbers() -> None:
    document = extract((FIXTURES / "fontconfig-user.pdf").read_bytes(), filename="fc.pdf")

    assert document.metadata == {"created": "2022-10-21T16:34:47+09:00", "page_count": 15}
    assert document.title == "fonts-conf"  # the header, read as the first line
    assert "fonts-conf" not in document.text
    first = document.page_text(1)
    assert first.startswith("Name\nfonts.conf — Font configuration files\nSynopsis\n")
    # The page number "1" was the last line; PDFium's line-end hyphen mark is resolved.
    assert first.endswith("familylang String Languages corresponding to each family")
    assert "substitutions are performed to canonicalize" in document.page_text(2)
    assert "\ufffe" not in document.text
    for page in document.pages:
        last_line = document.text[page.start : page.end].rsplit("\n", 1)[-1]
        assert not last_line.strip().isdigit(), page


def test_a_pdf_that_needs_a_password_is_refused() -> None:
    data = makers.simple_pdf([["secret"]], owner_password="owner", user_password="reader")

    with pytest.raises(EncryptedDocumentError) as caught:
        extract(data, filename="locked.pdf")

    assert str(caught.value) == (
        "The PDF 'locked.pdf' is encrypted and needs a password to be read; upload a copy "
        "without the password."
    )
    assert caught.value.code == "ENCRYPTED_DOCUMENT"


def test_a_pdf_encrypted_only_against_editing_is_read() -> None:
    data = makers.simple_pdf([["Open to read."]], owner_password="owner")

    assert extract(data).text == "Open to read."


@pytest.mark.parametrize(
    "data",
    [makers.simple_pdf([["x"]] * 3)[:300], b"%PDF-1.7\n1 0 obj garbage"],
    ids=["truncated", "garbage"],
)
def test_a_damaged_pdf_is_corrupt_and_names_pdfiums_error(data: bytes) -> None:
    with pytest.raises(CorruptDocumentError) as caught:
        extract(data, filename="broken.pdf")

    assert str(caught.value) == (
        "The PDF 'broken.pdf' is damaged and cannot be read: Failed to load document "
        "(PDFium: Data format error). Upload an undamaged copy."
    )
    assert caught.value.code == "CORRUPT_DOCUMENT"


def test_more_pages_than_the_limit_are_refused() -> None:
    data = makers.simple_pdf([["one"], ["two"], ["three"]])

    with pytest.raises(TooManyPagesError) as caught:
        extract(data, filename="long.pdf", limits=ExtractionLimits(max_pages=2))

    assert str(caught.value) == (
        "The PDF 'long.pdf' has 3 pages, more than the limit of 2; split it into parts of at "
        "most 2 pages."
    )
    assert caught.value.code == "TOO_MANY_PAGES"
    assert extract(data, limits=ExtractionLimits(max_pages=3)).metadata["page_count"] == 3


@pytest.mark.parametrize(
    ("value", "iso"),
    [
        ("D:20240301123000Z", "2024-03-01T12:30:00+00:00"),
        ("D:20221021163447+09'00'", "2022-10-21T16:34:47+09:00"),
        ("D:19990102030405-05'30", "1999-01-02T03:04:05-05:30"),
        ("D:2023", "2023-01-01T00:00:00"),
        ("20230615", "2023-06-15T00:00:00"),
        ("D:20231345", None),  # month 13
        ("yesterday", None),
        ("", None),
    ],
)
def test_pdf_dates_become_iso_8601(value: str, iso: str | None) -> None:
    assert pdf_date(value) == iso
