"""Scanned pages: OCR'd by Tesseract where it is installed, marked ``needs_ocr`` where not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rapidfuzz.distance import Levenshtein

from rag_plugin.files import ExtractedDocument, ExtractionLimits, Page, extract
from rag_plugin.files import ocr as ocr_module
from tests.rag_plugin.files import makers

SCANNED_TEXT = " ".join(makers.SCANNED)


def character_error_rate(found: str, expected: str) -> float:
    """Edits to turn ``found`` into ``expected`` per expected character, spacing aside."""
    found, expected = " ".join(found.split()), " ".join(expected.split())
    return Levenshtein.distance(found, expected) / len(expected)


def test_tesseract_is_installed() -> None:
    # `make test` installs it; without it the OCR tests below would test nothing.
    assert shutil.which("tesseract") is not None
    assert ocr_module.tesseract_available()


def test_a_scanned_page_is_read_by_ocr(report: ExtractedDocument) -> None:
    page = report.pages[3]

    assert (page.has_image, page.ocr, page.needs_ocr) == (True, True, False)
    assert character_error_rate(report.page_text(4), SCANNED_TEXT) < 0.10


def test_character_error_rate_counts_edits_per_expected_character() -> None:
    assert character_error_rate("Otters  were\nseen", "Otters were seen") == 0
    assert character_error_rate("Otters wore seen", "Otters were seen") == 1 / 16


@pytest.fixture
def no_tesseract(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where the tesseract program is not on PATH."""
    real_which = shutil.which

    def which(name: str, *args: object, **kwargs: object) -> str | None:
        return None if name == "tesseract" else real_which(name)

    monkeypatch.setattr(shutil, "which", which)


@pytest.mark.usefixtures("no_tesseract")
def test_without_tesseract_scanned_pages_are_marked_needs_ocr() -> None:
    document = extract(makers.scanned_pdf(2), filename="scan.pdf")

    assert document.text == "\n\n"
    assert document.pages == (
        Page(1, 0, 0, has_image=True, needs_ocr=True),
        Page(2, 2, 2, has_image=True, needs_ocr=True),
    )
    assert document.needs_ocr_pages == (1, 2)
    assert document.metadata["needs_ocr_pages"] == [1, 2]


@pytest.mark.usefixtures("no_tesseract")
def test_without_tesseract_pages_with_text_are_read_as_usual(report_pdf: bytes) -> None:
    document = extract(report_pdf)

    assert document.needs_ocr_pages == (4,)
    assert document.page_text(4) == ""
    assert document.page_text(5) == "\n".join(makers.PAGE_5)


def test_ocr_switched_off_marks_the_scan_needs_ocr() -> None:
    document = extract(makers.scanned_pdf(1), limits=ExtractionLimits(ocr=False))

    assert document.pages == (Page(1, 0, 0, has_image=True, needs_ocr=True),)


def test_a_failing_tesseract_marks_the_page_needs_ocr(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Tesseract with no language data fails on every page.
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))

    document = extract(makers.scanned_pdf(1))

    assert document.pages == (Page(1, 0, 0, has_image=True, needs_ocr=True),)
    assert "Tesseract failed on a page" in caplog.text
