"""Files made once per session: making and reading them (OCR included) is the slow part."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_plugin.files import ExtractedDocument, extract
from tests.rag_plugin.files import makers

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def report_pdf() -> bytes:
    return makers.report_pdf()


@pytest.fixture(scope="session")
def report(report_pdf: bytes) -> ExtractedDocument:
    """The five-page report read in this process, its scanned page OCR'd."""
    return extract(report_pdf, filename="report.pdf")


@pytest.fixture(scope="session")
def report_docx() -> bytes:
    return makers.report_docx()
