"""ragctl's line formats for the parts the fake portal does not produce."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_plugin.cli.discovery import Document, FileDocument
from rag_plugin.cli.output import (
    dry_run_line,
    failed_line,
    ingested_line,
    search_lines,
    source_line,
    summary_line,
)


def test_search_lines_show_typo_correction_rerank_and_normalized_score() -> None:
    response = {
        "results": [
            {
                "id": "u1_0",
                "content": "Hybrid\tsearch\nfuses rankings.",
                "score": 0.016393,
                "normalized_score": 0.5,
                "metadata": {"title": "", "source": "", "start_offset": 5, "end_offset": 34},
            }
        ],
        "total": 1,
        "strategy": "hybrid",
        "reranked": True,
        "duration_ms": 12.5,
        "corrected_query": "hybrid search",
    }

    assert search_lines(response, "hybird search") == [
        "1 result for 'hybird search' (strategy=hybrid, reranked, 12.5 ms)",
        "searched for 'hybrid search' instead (typo correction)",
        "",
        "1. (untitled)  [score 0.016393 (normalized 0.5000)]",
        "   source: (none)  chars 5-34  id u1_0",
        "   Hybrid search fuses rankings.",
    ]


def test_tabs_and_line_breaks_cannot_split_an_audit_line() -> None:
    document = Document(Path("d/a.md"), "a.md", "Tab\there\nand break", "x", 1)

    assert dry_run_line(document) == "d/a.md\tTab here and break\t1 bytes"
    assert failed_line(Path("d/a.md"), "HTTP 500: boom\nTraceback") == (
        "failed\td/a.md\tHTTP 500: boom Traceback"
    )


def test_a_file_to_upload_is_planned_with_its_type_for_a_title() -> None:
    document = FileDocument(Path("d/report.PDF"), "report.PDF", "application/pdf", 2048)

    assert dry_run_line(document) == "d/report.PDF\t(PDF upload)\t2048 bytes"


@pytest.mark.parametrize(
    ("unchanged", "pages", "line"),
    [
        (False, (), "ingested\td/a.pdf\t3 chunks"),
        (True, (), "unchanged\td/a.pdf\t3 chunks"),
        (False, (4,), "ingested\td/a.pdf\t3 chunks\tpage 4 needs OCR: it is an image and its "
         "text was not read"),
        (True, (2, 5), "unchanged\td/a.pdf\t3 chunks\tpages 2, 5 need OCR: they are images and "
         "their text was not read"),
    ],
)  # fmt: skip
def test_ingested_line_says_unchanged_and_the_pages_needing_ocr(
    unchanged: bool, pages: tuple[int, ...], line: str
) -> None:
    assert ingested_line(Path("d/a.pdf"), 3, unchanged=unchanged, needs_ocr_pages=pages) == line


def test_summary_counts_unchanged_documents_only_when_there_are_some() -> None:
    assert summary_line(4, 4, 0, 6) == "summary\tdocuments=4 succeeded=4 failed=0 chunks=6"
    assert summary_line(4, 3, 1, 6, unchanged=3) == (
        "summary\tdocuments=4 succeeded=3 failed=1 chunks=6 unchanged=3"
    )


def test_a_footnote_of_a_file_names_its_page() -> None:
    paged = {
        "title": "Manual",
        "citation": "Manual, p. 3",
        "collection": "docs",
        "source": "manual.pdf",
    }
    assert source_line(2, paged) == "  [2] Manual, p. 3 (docs: manual.pdf)"
    # A server before pages were cited sends no citation: the title stands alone.
    assert source_line(1, {"title": "Seat", "collection": "docs", "source": "seat.md"}) == (
        "  [1] Seat (docs: seat.md)"
    )
